// error: 3:3: source_target_pairs: 1 is the target of two pairs (each target receives once)
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 1], [2, 1]]> : tensor<2x2xi64>} : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
