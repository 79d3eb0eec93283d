/// One measured number: what was measured, on which system, in which configuration.
///
/// A baseline's figure names the Rewind figure it is compared with (`comparedWith`, a `key`), and
/// carries `ratio` = baseline ÷ Rewind from the same run: below 1 means the baseline is slower
/// (or smaller, for sizes; for latencies below 1 means the baseline is faster).
struct Figure: Codable, Sendable {
  var scenario: String
  var system: String
  var configuration: String
  var metric: String
  var value: Double
  var unit: String
  var comparedWith: String?
  var ratio: Double?

  var key: String { "\(scenario)|\(system)|\(configuration)|\(metric)" }
}

/// A target from the benchmark issue, judged on this run's figures.
struct TargetCheck: Codable, Sendable {
  var target: String
  var measured: String
  var met: Bool?
}
