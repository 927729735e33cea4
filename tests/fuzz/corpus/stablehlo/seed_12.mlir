
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.frobnicate %x : tensor<4xf32>
  %1 = "stablehlo.frobnicate"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
