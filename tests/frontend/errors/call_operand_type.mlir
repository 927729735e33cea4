// error: 6:3: call to '@double': operand 0 has type tensor<8xf32>, but the function's is tensor<4xf32>
func.func private @double(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @main(%x: tensor<8xf32>) -> tensor<4xf32> {
  %0 = func.call @double(%x) : (tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
