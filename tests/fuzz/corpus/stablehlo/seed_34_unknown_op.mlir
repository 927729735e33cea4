// error: 3:8: unknown op 'stablehlo.frobnicate'
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.frobnicate %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
