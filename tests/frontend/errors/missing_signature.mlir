// error: 3:28: expected ':' and the result types of the op, found 'return'
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %x
  return %0 : tensor<4xf32>
}
