
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>
  %1:2 = "stablehlo.optimization_barrier"(%0, %arg1) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %a, %b = stablehlo.optimization_barrier %1#1, %1#0 : tensor<4xf32>, tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
