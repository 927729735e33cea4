// error: 3:24: operand 0 of 'stablehlo.abs' has type tensor<4xf32> but the signature says tensor<4xf16>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = "stablehlo.abs"(%x) : (tensor<4xf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
