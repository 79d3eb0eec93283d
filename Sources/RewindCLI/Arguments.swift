/// A usage error: exit code 2, with the message shown to the user.
public struct UsageError: Error, CustomStringConvertible {
  public var description: String
  /// Whether this is `helpRequested` rather than a mistake.
  public private(set) var asksForHelp = false
  public init(_ description: String) { self.description = description }

  /// `--help` or `-h` where a flag could stand: `RewindTool` shows the command's help and exits 0
  /// instead of running it.
  public static var helpRequested: UsageError {
    var error = UsageError("--help asks for the command's help")
    error.asksForHelp = true
    return error
  }
}

/// The arguments of one command: positionals, `--name value` options and `--flag`s. Knows which
/// names each command accepts, so an unknown flag is a usage error rather than silently ignored.
///
/// A value option given twice is a usage error (`--since given twice`): last-wins would let a
/// forgotten option narrow or widen a selection unseen. A flag given twice says the same thing
/// twice and is accepted. `--help` and `-h` ask for help only where a flag could stand: as an
/// option's value (`--type --help`) or after `--` they are text like any other. A word that is a
/// negative number (`-1`) is a positional, so that the command can say it is out of range. A
/// one-letter option takes its value attached too (`-n2`), as `head` and `tail` do.
public struct Arguments {
  public private(set) var positionals: [String] = []
  private var values: [String: String] = [:]
  private var flags: Set<String> = []

  /// - Parameters:
  ///   - arguments: the command's words, after its name.
  ///   - options: names that take a value (`--events 100`, `--events=100`).
  ///   - allowedFlags: names that take none (`--json`).
  /// - Throws: `UsageError.helpRequested` when `--help` or `-h` stands where a flag could (even
  ///   after a bad argument: asking for help wins); otherwise a `UsageError` for the first bad one.
  public init(_ arguments: some Sequence<String>, options: Set<String>, flags allowedFlags: Set<String>)
    throws(UsageError)
  {
    var iterator = arguments.makeIterator()
    var onlyPositionals = false
    var helpRequested = false
    var problem: UsageError?
    while let argument = iterator.next() {
      if onlyPositionals || !argument.hasPrefix("-") || argument == "-" || Self.isNegativeNumber(argument) {
        positionals.append(argument)
        continue
      }
      if argument == "--" {
        onlyPositionals = true
        continue
      }
      // Exactly two dashes before a name, one before a letter: `-from` and `---from` are mistakes.
      let long = argument.hasPrefix("--")
      var name = String(argument.dropFirst(long ? 2 : 1))
      var inline: String?
      if let equals = name.firstIndex(of: "=") {
        inline = String(name[name.index(after: equals)...])
        name = String(name[..<equals])
      } else if !long, name.count > 1, let letter = name.first, options.contains(String(letter)),
        !options.contains(name), !allowedFlags.contains(name)
      {
        // A one-letter option with its value attached, as head and tail take it: -n2. Not a whole
        // option's name after one dash (`-output`, `-origin` in export, whose `-o` takes a file):
        // that is the mistake asked about below, not `-o` writing to a file named `utput`.
        inline = String(name.dropFirst())
        name = String(letter)
      }
      if long ? name.isEmpty || name.hasPrefix("-") : name.count != 1 {
        let known = !long && (options.contains(name) || allowedFlags.contains(name))
        problem = problem ?? UsageError("unknown option \(argument)" + (known ? "; did you mean --\(name)?" : ""))
        continue
      }
      if (argument == "--help" || argument == "-h") && !allowedFlags.contains(name) && !options.contains(name) {
        helpRequested = true
      } else if allowedFlags.contains(name) {
        if inline != nil { problem = problem ?? UsageError("\(Self.spelled(name)) takes no value") }
        flags.insert(name)
      } else if options.contains(name) {
        guard let value = inline ?? iterator.next() else {
          problem = problem ?? UsageError("\(Self.spelled(name)) needs a value")
          break
        }
        if let earlier = values[name] {
          problem =
            problem
            ?? UsageError(
              "\(Self.spelled(name)) given twice ('\(earlier)' and '\(value)'); give it once")
        }
        values[name] = value
      } else {
        // A near miss of a name this command takes (`--folow`, `--jsno`) is named.
        let near = long ? Self.nearest(to: name, among: options.union(allowedFlags).filter { $0.count > 1 }) : nil
        problem = problem ?? UsageError("unknown option \(argument)" + (near.map { "; did you mean --\($0)?" } ?? ""))
      }
    }
    if helpRequested { throw .helpRequested }
    if let problem { throw problem }
  }

  /// The one name among `candidates` nearest `typed`, for "did you mean …?": within two edits (a
  /// letter added, dropped, changed, or two neighbours swapped), one for a typed name of four
  /// letters or fewer, and nearer than every other candidate; nil when none is, or two are as
  /// near. Sorted candidates, so the answer never rests on a set's order.
  static func nearest(to typed: String, among candidates: some Sequence<String>) -> String? {
    let typedLetters = Array(typed.unicodeScalars)
    let allowed = typedLetters.count <= 4 ? 1 : 2
    var best: (name: String, distance: Int)?
    var tied = false
    for candidate in candidates.sorted() where candidate != typed {
      let distance = editDistance(typedLetters, Array(candidate.unicodeScalars), atMost: allowed)
      guard distance <= allowed else { continue }
      if let found = best, found.distance <= distance {
        if found.distance == distance { tied = true }
        continue
      }
      best = (candidate, distance)
      tied = false
    }
    return tied ? nil : best?.name
  }

  /// The edits from `a` to `b` (insertions, deletions, substitutions, and swaps of neighbours:
  /// the optimal string alignment distance), or `bound + 1` when it is more than `bound`. For
  /// option and command names: the whole table, a few hundred cells.
  static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar], atMost bound: Int) -> Int {
    guard abs(a.count - b.count) <= bound else { return bound + 1 }
    guard !a.isEmpty, !b.isEmpty else { return min(max(a.count, b.count), bound + 1) }
    // Rows of the table: the one before the last (a swap reaches back to it), the last, the current.
    var older = [Int](repeating: 0, count: b.count + 1)
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
      current[0] = i
      for j in 1...b.count {
        let cost = a[i - 1] == b[j - 1] ? 0 : 1
        current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
        if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { current[j] = min(current[j], older[j - 2] + 1) }
      }
      (older, previous, current) = (previous, current, older)
    }
    return min(previous[b.count], bound + 1)
  }

  /// Whether `argument` is `-` and digits (`-1`): a number out of range, not an option.
  static func isNegativeNumber(_ argument: String) -> Bool {
    argument.first == "-" && argument.count > 1 && argument.dropFirst().allSatisfy { $0.isASCII && $0.isNumber }
  }

  public func flag(_ name: String) -> Bool { flags.contains(name) }

  /// An option's name as users type it: `-n`, `--events`.
  static func spelled(_ name: String) -> String { (name.count == 1 ? "-" : "--") + name }

  public func value(_ name: String) -> String? { values[name] }

  /// A count option's value (`--limit`, `-n`): decimal digits alone, as `sequenceNumber` reads a
  /// sequence number (no sign: `Int("+3")` would take one, and `tail -n +3` means another thing
  /// elsewhere), within `range`; `fallback` when the option is absent.
  /// - Throws: `UsageError` saying the range when the value is not such a number.
  public func integer(_ name: String, default fallback: Int, range: ClosedRange<Int> = 0...Int.max) throws(UsageError)
    -> Int
  {
    guard let text = values[name] else { return fallback }
    guard let digits = Self.sequenceNumber(text), digits <= UInt64(Int.max), range.contains(Int(digits)) else {
      throw UsageError(
        "\(Self.spelled(name)) needs a whole number in \(range.lowerBound)...\(range.upperBound), not '\(text)'")
    }
    return Int(digits)
  }

  /// A sequence-number option's value (`--from`, `--to`): any `UInt64` from `lowest`, as
  /// `sequenceNumber` reads it, or `fallback` when the option is absent.
  /// - Throws: `UsageError` saying the range when the value is not such a number.
  public func sequence(_ name: String, default fallback: UInt64, from lowest: UInt64 = 0) throws(UsageError)
    -> UInt64
  {
    guard let text = values[name] else { return fallback }
    guard let value = Self.sequenceNumber(text), value >= lowest else {
      throw UsageError(
        "\(Self.spelled(name)) needs a whole number in \(lowest)...\(UInt64.max), not '\(text)'")
    }
    return value
  }

  /// `text` as a sequence number, the way every command reads one: decimal digits alone (no
  /// sign: `UInt64("+5")` would take one), up to `UInt64.max`; nil for anything else.
  public static func sequenceNumber(_ text: some StringProtocol) -> UInt64? {
    guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
      return nil
    }
    return UInt64(text)
  }

  /// Whether `text` is decimal digits alone that no `UInt64` holds (`99999999999999999999`): a
  /// whole number past every sequence number, which a command says is past the journal's end,
  /// not that it is no number.
  static func isPastEverySequenceNumber(_ text: some StringProtocol) -> Bool {
    !text.isEmpty && text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
      && UInt64(text) == nil
  }

  /// Exactly `count` positionals. Too few is a usage error saying what the command `needs` (for
  /// example "the journal directory and a sequence number: rewind show DIR SEQ"); too many names
  /// the first extra one.
  public func positionals(exactly count: Int, needs: String) throws(UsageError) -> [String] {
    guard positionals.count <= count else { throw UsageError("unexpected argument '\(positionals[count])'") }
    guard positionals.count == count else { throw UsageError("needs \(needs)") }
    return positionals
  }

  /// The single positional naming a journal directory.
  public func directory(default fallback: String? = nil) throws(UsageError) -> String {
    guard positionals.count <= 1 else { throw UsageError("unexpected argument '\(positionals[1])'") }
    guard let directory = positionals.first ?? fallback else { throw UsageError("missing the journal directory") }
    return directory
  }
}
