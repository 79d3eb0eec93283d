internal import Foundation

/// The results of one run: the table on standard output and the JSON file.
struct Report: Codable {
  struct Machine: Codable {
    var cpus: Int
    var memoryBytes: Int
    var cpuModel: String
    /// The first processor's clock as `/proc/cpuinfo` gives it ("cpu MHz"), nil where it gives
    /// none. A VM can be moved to another host under the same model name: at 0b10302 it reported
    /// 1,996 MHz where earlier runs reported 2.6 GHz, and every figure that costs CPU halved
    /// (Benchmarks/HISTORY.md). Runs on different clocks are not to be compared.
    var cpuMHz: Double?

    /// One line for the end of the run's output.
    var summary: String {
      let clock = cpuMHz.map { " at \(Int($0.rounded())) MHz" } ?? ""
      return "machine: \(cpuModel)\(clock), \(cpus) CPUs, \(memoryBytes / (1 << 20)) MiB"
    }
  }

  var command: String
  var mode: String
  var seed: UInt64
  var machine: Machine
  var totalSeconds: Double
  var figures: [Figure]
  var targets: [TargetCheck]

  /// The run's table, one section per scenario.
  func table() -> String {
    var rows: [[String]] = [["scenario", "system", "configuration", "metric", "value", "unit", "vs Rewind"]]
    for figure in figures {
      rows.append([
        figure.scenario, figure.system, figure.configuration, figure.metric, Self.format(figure.value), figure.unit,
        figure.ratio.map { Self.format($0) + "×" } ?? "",
      ])
    }
    let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
    var lines: [String] = []
    for (index, row) in rows.enumerated() {
      let cells = row.enumerated().map { column, cell in
        let pad = String(repeating: " ", count: widths[column] - cell.count)
        return column == 4 || column == 6 ? pad + cell : cell + pad
      }
      lines.append(cells.joined(separator: "  "))
      if index == 0 { lines.append(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
    }
    lines.append("")
    lines.append("targets (issue 6):")
    for target in targets {
      let verdict = target.met.map { $0 ? "met   " : "MISSED" } ?? "n/a   "
      lines.append("  \(verdict)  \(target.target): \(target.measured)")
    }
    return lines.joined(separator: "\n")
  }

  func write(to path: String) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    let directory = (path as NSString).deletingLastPathComponent
    if !directory.isEmpty {
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }
    try encoder.encode(self).write(to: URL(fileURLWithPath: path))
  }

  /// The results file that `write(to:)` wrote at `path`.
  /// - Throws: `BenchError` naming `path`: it cannot be read, or it is not such a file.
  static func read(from path: String) throws -> Report {
    guard let data = FileManager.default.contents(atPath: path) else { throw BenchError("cannot read \(path)") }
    do {
      return try JSONDecoder().decode(Report.self, from: data)
    } catch {
      throw BenchError("\(path) is not a results file that --json wrote: \(error)")
    }
  }

  /// What is wrong with the results file at `path`: it must decode as a `Report`, hold at least
  /// one finite figure for each of `scenarios`, and no figure that is not finite.
  static func problems(in path: String, scenarios: [String]) throws -> [String] {
    let report = try read(from: path)
    var problems: [String] = []
    for figure in report.figures where !figure.value.isFinite || figure.ratio?.isFinite == false {
      problems.append("\(figure.key) is \(figure.value) (ratio \(String(describing: figure.ratio)))")
    }
    let measured = Set(report.figures.map(\.scenario))
    for scenario in scenarios where !measured.contains(scenario) {
      problems.append("scenario \(scenario) recorded no figure")
    }
    return problems
  }

  /// Three significant digits below 1000, grouped thousands above.
  static func format(_ value: Double) -> String {
    guard value.isFinite else { return "\(value)" }
    if abs(value) >= 1000 {
      let digits = String(Int(value.rounded()))
      var grouped = ""
      for (offset, character) in digits.reversed().enumerated() {
        if offset > 0 && offset % 3 == 0 && character != "-" { grouped.append(",") }
        grouped.append(character)
      }
      return String(grouped.reversed())
    }
    if value == 0 { return "0" }
    let decimals = max(0, 2 - Int(floor(log10(abs(value)))))
    return String(format: "%.\(decimals)f", value)
  }

  static func machine() -> Machine {
    machine(
      cpus: ProcessInfo.processInfo.activeProcessorCount,
      meminfo: (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? "",
      cpuinfo: (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? "")
  }

  /// The machine as the texts of `/proc/meminfo` and `/proc/cpuinfo` describe it: the total
  /// memory, and the first processor's model name and clock (unknown and nil where absent).
  static func machine(cpus: Int, meminfo: String, cpuinfo: String) -> Machine {
    // The value of the first line of `text` named `name`, as "name<spaces or tabs>: value".
    func field(_ name: String, in text: String) -> String? {
      text.split(separator: "\n").first { $0.hasPrefix(name) }
        .flatMap { $0.split(separator: ":", maxSplits: 1).dropFirst().first }
        .map { $0.trimmingCharacters(in: .whitespaces) }
    }
    // "MemTotal:       24105312 kB"
    let kilobytes = field("MemTotal", in: meminfo).flatMap { Int($0.split(separator: " ").first ?? "") } ?? 0
    return Machine(
      cpus: cpus, memoryBytes: kilobytes * 1024, cpuModel: field("model name", in: cpuinfo) ?? "unknown",
      cpuMHz: field("cpu MHz", in: cpuinfo).flatMap(Double.init))
  }
}
