
func.func @main(%x: tensor<8x32x32x3xbf16>, %k: tensor<3x3x3x16xbf16>, %g: tensor<3x32x32x8xf32>, %h: tensor<3x5x5x16xf32>) -> () {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<8x32x32x3xbf16>, tensor<3x3x3x16xbf16>) -> tensor<8x16x16x16xbf16>
  %1 = stablehlo.convolution(%g, %h)
         dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f],
         window = {rhs_dilate = [2, 2]}
         {batch_group_count = 1 : i64, feature_group_count = 1 : i64} :
       (tensor<3x32x32x8xf32>, tensor<3x5x5x16xf32>) -> tensor<24x24x8x16xf32>
  %2 = "stablehlo.convolution"(%x, %k) {
    batch_group_count = 1 : i64,
    dimension_numbers = #stablehlo.conv<raw
      input_batch_dimension = 0, input_feature_dimension = 3, input_spatial_dimensions = [1, 2],
      kernel_input_feature_dimension = 2, kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1],
      output_batch_dimension = 0, output_feature_dimension = 3, output_spatial_dimensions = [1, 2]
    >,
    feature_group_count = 1 : i64,
    padding = dense<2> : tensor<2x2xi64>,
    window_strides = array<i64: 1, 1>
  } : (tensor<8x32x32x3xbf16>, tensor<3x3x3x16xbf16>) -> tensor<8x34x34x16xbf16>
  return
}
