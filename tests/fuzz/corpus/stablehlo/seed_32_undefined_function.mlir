// error: 3:3: call to undefined function '@missing'
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @missing(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
