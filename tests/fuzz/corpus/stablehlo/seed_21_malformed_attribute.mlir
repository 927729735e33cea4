// error: 3:53: expected an attribute value, found '}'
func.func @main(%x: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %0 = "stablehlo.concatenate"(%x, %x) {dimension = } : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
