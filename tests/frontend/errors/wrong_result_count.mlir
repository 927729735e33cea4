// error: 3:33: operation defines 1 results but was provided 2 to bind
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0:2 = "stablehlo.negate"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0#0 : tensor<4xf32>
}
