internal import Foundation

/// The run as Markdown, for Benchmarks/RESULTS.md: `rewind-bench --markdown RESULTS.json` prints
/// it, so that the figures a results page quotes are the ones the run wrote, every one of them.
extension Report {
  /// Past this many metrics, a scenario's table lists one figure per row, as it does when a
  /// column per metric would leave most cells empty (the time-travel scenario measures something
  /// else in each configuration).
  static let markdownMetricColumns = 8

  /// The run's command, machine and duration, one table per scenario (in the order the run
  /// recorded them) and the targets with their verdicts. A scenario with few metrics gets a row
  /// per system and configuration and a column per metric ("–" where that row has no such
  /// figure); one with more, or whose rows would have fewer figures than empty cells, a row per
  /// figure. A baseline's cell gives its ratio to the Rewind figure it is compared with
  /// (baseline ÷ Rewind).
  func markdown() -> String {
    var lines = [
      "`\(command)`: \(mode) mode, seed 0x\(String(seed, radix: 16, uppercase: true)), "
        + "\(Self.format(totalSeconds)) s; \(machine.summary)."
    ]
    var scenarios: [String] = []
    var figuresOf: [String: [Figure]] = [:]
    for figure in figures {
      if figuresOf[figure.scenario] == nil { scenarios.append(figure.scenario) }
      figuresOf[figure.scenario, default: []].append(figure)
    }
    for scenario in scenarios {
      lines += ["", "### \(scenario)", ""]
      lines += Self.markdownTable(figuresOf[scenario] ?? [])
    }
    if !targets.isEmpty {
      lines += ["", "### targets", "", "| target | measured | verdict |", "|---|---|---|"]
      for target in targets {
        let verdict = target.met.map { $0 ? "met" : "**missed**" } ?? "not judged"
        lines.append("| \(Self.cell(target.target)) | \(Self.cell(target.measured)) | \(verdict) |")
      }
    }
    return lines.joined(separator: "\n") + "\n"
  }

  /// One scenario's figures as a table (see `markdown()`).
  static func markdownTable(_ figures: [Figure]) -> [String] {
    struct Row: Hashable {
      var system: String
      var configuration: String
    }
    var rows: [Row] = []
    var metrics: [String] = []
    var cells: [Row: [String: String]] = [:]
    for figure in figures {
      let row = Row(system: figure.system, configuration: figure.configuration)
      if cells[row] == nil { rows.append(row) }
      if !metrics.contains(figure.metric) { metrics.append(figure.metric) }
      cells[row, default: [:]][figure.metric] = valueCell(figure)
    }
    guard metrics.count <= markdownMetricColumns, 2 * figures.count >= rows.count * metrics.count else {
      return ["| system | configuration | metric | value |", "|---|---|---|---:|"]
        + figures.map { figure in
          "| \(cell(figure.system)) | \(cell(figure.configuration)) | \(cell(figure.metric)) | \(valueCell(figure)) |"
        }
    }
    return [
      "| system | configuration | " + metrics.map(cell).joined(separator: " | ") + " |",
      "|---|---|" + String(repeating: "---:|", count: metrics.count),
    ]
      + rows.map { row in
        "| \(cell(row.system)) | \(cell(row.configuration)) | "
          + metrics.map { cells[row]?[$0] ?? "–" }.joined(separator: " | ") + " |"
      }
  }

  /// A figure's value and unit (if it has one), and its ratio to Rewind where it is a baseline's.
  private static func valueCell(_ figure: Figure) -> String {
    format(figure.value) + (figure.unit.isEmpty ? "" : " " + cell(figure.unit))
      + (figure.ratio.map { " (\(format($0))×)" } ?? "")
  }

  /// `text` made safe inside a table cell: a `|` would end the cell, a line break the row.
  static func cell(_ text: String) -> String {
    text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
  }
}
