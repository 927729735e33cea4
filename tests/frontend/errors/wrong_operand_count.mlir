// error: 3:8: 'stablehlo.add' takes 2 operand(s), found 1
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
