
func.func @main(%x: tensor<4xi32>) -> tensor<?xi32> {
  %0 = tensor.cast %x : tensor<4xi32> to tensor<?xi32>
  %1 = stablehlo.compare  GT, %x, %x : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %e = tensor.extract %1[] : tensor<4xi1>
  check.expect_eq_const %x, dense<[1, 2, 3, 4]> : tensor<4xi32>
  return %0 : tensor<?xi32>
}
