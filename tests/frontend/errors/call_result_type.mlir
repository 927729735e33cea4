// error: 6:3: call to '@double': result 0 has type tensor<4xbf16>, but the function's is tensor<4xf32>
func.func private @double(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xbf16> {
  %0 = func.call @double(%x) : (tensor<4xf32>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}
