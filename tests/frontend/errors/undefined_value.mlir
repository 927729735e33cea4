// error: 4:26: use of undefined value '%y'
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %x : tensor<4xf32>
  %1 = stablehlo.add %0, %y : tensor<4xf32>
  return %1 : tensor<4xf32>
}
