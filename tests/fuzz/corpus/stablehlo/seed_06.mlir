
module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 2 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func @main(%x: tensor<8x16xf32>, %t: !stablehlo.token) -> () {
    %0 = "stablehlo.all_to_all"(%x) {split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 4 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>} : (tensor<8x16xf32>) -> tensor<32x4xf32>
    %1 = "stablehlo.collective_permute"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>}> : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %2 = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 7, type = 1>, is_host_transfer = false, mhlo.frontend_attributes = {_xla_send_recv_source_target_pairs = "{{0,1},{2,3}}"}} : (tensor<8x16xf32>, !stablehlo.token) -> !stablehlo.token
    %3 = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh, axes = [#stablehlo.axis_ref<name = "y">]>, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, use_global_device_ids} : (tensor<8x16xf32>) -> tensor<32x16xf32>
    %4 = "stablehlo.reduce_scatter"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {scatter_dimension = 1 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<8x16xf32>) -> tensor<8x8xf32>
    return
  }
}
