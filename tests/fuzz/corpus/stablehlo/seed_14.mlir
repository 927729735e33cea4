
func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %init = stablehlo.constant dense<