// error: 4:5: result tensor<4000xf32> has 4000 elements along dimension 0, but the operand's 1024 x 4 members gives 4096
module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%x: tensor<1024xf32>) -> tensor<4000xf32> {
    %0 = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<1024xf32>) -> tensor<4000xf32>
    return %0 : tensor<4000xf32>
  }
}
