// error: 4:3: reduce dimension 1 is listed twice
func.func @main(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %cst) applies stablehlo.add across dimensions = [1, 1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
  return %s : tensor<8xf32>
}
