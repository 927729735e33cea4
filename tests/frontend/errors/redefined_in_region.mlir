// error: 5:10: redefinition of SSA value '%0'
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %0 = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = "stablehlo.reduce"(%x, %0) ({
    ^bb0(%0: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %0, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}
