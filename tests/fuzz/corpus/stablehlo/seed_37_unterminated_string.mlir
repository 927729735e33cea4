// error: 3:57: unterminated string literal
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @foo(%x) {backend_config = "unterminated} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
