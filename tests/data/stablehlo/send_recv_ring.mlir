// Four partitions in a ring: each sends its argument to the next and adds what it receives
// (written for Orrery's tests: tests/integration/trace.sh and convert.sh).
module @ring attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<65536xf32>) -> tensor<65536xf32> {
    %t = stablehlo.create_token : !stablehlo.token
    %s = "stablehlo.send"(%arg0, %t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (tensor<65536xf32>, !stablehlo.token) -> !stablehlo.token
    %r:2 = "stablehlo.recv"(%s) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (!stablehlo.token) -> (tensor<65536xf32>, !stablehlo.token)
    %0 = stablehlo.add %r#0, %arg0 : tensor<65536xf32>
    return %0 : tensor<65536xf32>
  }
}
