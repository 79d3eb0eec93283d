public import Rewind

/// The words, tags and auto-tagger rules of the workload: prose drawn from a fixed vocabulary, so
/// events are 100–300 bytes (some notes much longer) and compress like text.
public enum WorkloadText {
  /// Between `range` words of prose, separated by spaces, the first letter capitalized.
  ///
  /// The text is put together as bytes and made into a `String` once: appending word by word to a
  /// `String` and capitalizing it with `uppercased()` cost about 11,000 instructions per call, more
  /// than the manager's whole command the text goes into (the vocabulary is lowercase ASCII, so
  /// capitalizing is one byte's change).
  public static func words(_ range: ClosedRange<Int>, using random: inout SeededRandom) -> String {
    let count = range.lowerBound + Int(random.next() % UInt64(range.count))
    let vocabulary = vocabularyBytes
    var text: [UInt8] = []
    text.reserveCapacity(count * 8)
    for index in 0..<count {
      if index > 0 { text.append(UInt8(ascii: " ")) }
      text.append(contentsOf: vocabulary[Int(random.next() % UInt64(vocabulary.count))])
    }
    if let first = text.first { text[0] = first - UInt8(ascii: "a") + UInt8(ascii: "A") }
    return String(decoding: text, as: UTF8.self)
  }

  /// A few popular tags and a long tail, as people tag.
  public static func tag(using random: inout SeededRandom) -> NoteTag {
    let skew = random.next() % 100
    let pool = skew < 70 ? tags.prefix(8) : tags[...]
    return NoteTag(pool[pool.startIndex + Int(random.next() % UInt64(pool.count))])
  }

  public static let tags = [
    "work", "home", "ideas", "todo", "reading", "travel", "recipes", "meeting", "draft", "urgent", "later",
    "project-atlas", "project-birch", "books", "health", "finance", "garden", "music", "family", "review",
    "archive", "questions", "people", "swift", "design",
  ]

  /// The automation's rules: a keyword in a note's title or body earns it a tag.
  public static let autoTagger = AutoTagger(rules: [
    ("deadline", "urgent"), ("recipe", "recipes"), ("invoice", "finance"),
  ])

  /// Lowercase ASCII words (`words` relies on it to capitalize).
  public static let vocabulary: [String] = """
    the a of and to in is for on with that this it as at by from be are was or an not we you they
    note meeting plan call email draft list idea review follow up next week today tomorrow morning
    project budget design team client report notes summary action item owner deadline friday monday
    book chapter read page quote author library coffee lunch dinner recipe garden water trip flight
    hotel train ticket museum city weekend family birthday gift doctor appointment gym run walk
    swift code bug fix release build test branch merge journal event replay model store query cache
    apple orange bread milk eggs butter cheese pasta rice tomato onion garlic pepper salt olive oil
    remember ask check send write update finish start move cancel confirm share print sign pay
    quarterly numbers slides agenda minutes decision risk issue question answer feedback priority
    house rent car insurance tax bank invoice receipt phone charger laptop screen keyboard backup
    """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)

  /// `vocabulary`'s words as UTF-8 bytes, for `words`.
  private static let vocabularyBytes = vocabulary.map { Array($0.utf8) }
}
