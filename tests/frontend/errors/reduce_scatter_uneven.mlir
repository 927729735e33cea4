// error: 4:5: operand tensor<1024xf32> has 1024 elements along scatter_dimension 0, which the 3 members of a group cannot share evenly
module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 3 : i32} {
  func.func public @main(%x: tensor<1024xf32>) -> tensor<341xf32> {
    %0 = "stablehlo.reduce_scatter"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {scatter_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>} : (tensor<1024xf32>) -> tensor<341xf32>
    return %0 : tensor<341xf32>
  }
}
