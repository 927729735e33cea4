// Four partitions: a matmul, a pipeline shift (a collective_permute 0 -> 1 -> 2 -> 3, no wrap:
// the ranks at its ends take part in one direction only, so their Chakra graphs differ) and an
// all-reduce over all four (written for Orrery's tests: tests/integration/convert.sh).
module @pipeline_shift attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1048576xf32>, %arg1: tensor<1024x1024xf32>) -> tensor<1048576xf32> {
    %d = stablehlo.dot_general %arg1, %arg1, contracting_dims = [1] x [0] : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
    %p = "stablehlo.collective_permute"(%arg0) {channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3]]> : tensor<3x2xi64>} : (tensor<1048576xf32>) -> tensor<1048576xf32>
    %a = "stablehlo.all_reduce"(%p) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %s = stablehlo.add %x, %y : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, use_global_device_ids} : (tensor<1048576xf32>) -> tensor<1048576xf32>
    %r = stablehlo.reshape %d : (tensor<1024x1024xf32>) -> tensor<1048576xf32>
    %0 = stablehlo.add %a, %r : tensor<1048576xf32>
    return %0 : tensor<1048576xf32>
  }
}
