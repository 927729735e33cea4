// error: 3:83: tensor type larger than 2^56 bytes (64 PiB): no device holds it; check its dimensions
func.func @main(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.broadcast_in_dim %x, dims = [0, 1] : (tensor<8x8xf32>) -> tensor<4294967296x4294967296x8x8xf32>
  return %x : tensor<8x8xf32>
}
