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
  /// (baseline ÷ Rewind), and a last column, in a scenario with baselines, names that figure by
  /// its scenario and configuration (and its metric, where it is another one).
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

  /// One scenario's figures as a table (see `markdown()`); none for no figures.
  static func markdownTable(_ figures: [Figure]) -> [String] {
    struct Row: Hashable {
      var system: String
      var configuration: String
    }
    var rows: [Row] = []
    var metrics: [String] = []
    var figuresOf: [Row: [Figure]] = [:]
    for figure in figures {
      let row = Row(system: figure.system, configuration: figure.configuration)
      if figuresOf[row] == nil { rows.append(row) }
      if !metrics.contains(figure.metric) { metrics.append(figure.metric) }
      figuresOf[row, default: []].append(figure)
    }
    guard !figures.isEmpty else { return [] }
    let compared = figures.contains { $0.comparedWith != nil }
    let againstHeader = compared ? " against |" : ""
    let againstRule = compared ? "---|" : ""
    guard metrics.count <= markdownMetricColumns, 2 * figures.count >= rows.count * metrics.count else {
      return ["| system | configuration | metric | value |" + againstHeader, "|---|---|---|---:|" + againstRule]
        + figures.map { figure in
          "| \(cell(figure.system)) | \(cell(figure.configuration)) | \(cell(figure.metric)) | \(valueCell(figure)) |"
            + (compared ? " \(against([figure])) |" : "")
        }
    }
    return [
      "| system | configuration | " + metrics.map(cell).joined(separator: " | ") + " |" + againstHeader,
      "|---|---|" + String(repeating: "---:|", count: metrics.count) + againstRule,
    ]
      + rows.map { row in
        let held = figuresOf[row] ?? []
        return "| \(cell(row.system)) | \(cell(row.configuration)) | "
          + metrics.map { metric in held.last { $0.metric == metric }.map(valueCell) ?? "–" }.joined(separator: " | ")
          + " |" + (compared ? " \(against(held)) |" : "")
      }
  }

  /// The Rewind figures `figures` are compared with, each once, as "scenario: configuration"
  /// (", metric" where it is not the figure's own); "–" for none.
  private static func against(_ figures: [Figure]) -> String {
    var named: [String] = []
    for figure in figures {
      guard let key = figure.comparedWith else { continue }
      // A figure's key: scenario|system|configuration|metric (`Figure.key`).
      let parts = key.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
      var text = key
      if parts.count == 4 { text = parts[0] + ": " + parts[2] + (parts[3] == figure.metric ? "" : ", " + parts[3]) }
      if !named.contains(text) { named.append(text) }
    }
    return named.isEmpty ? "–" : cell(named.joined(separator: "; "))
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
