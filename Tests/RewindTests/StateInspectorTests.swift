import Testing

@testable import Rewind

/// `StateInspector.changedFields` shows an updated record by the fields that differ, read from the
/// canonical JSON of its two versions.
@Suite struct StateInspectorTests {
  struct Inner: Codable, Sendable, Equatable {
    var values: [Int]
    var label: String
  }

  /// Strings holding the characters that delimit JSON members, so that a scanner that did not
  /// skip strings would cut a field in the wrong place.
  struct Record: Codable, Sendable {
    var body: String
    var inner: Inner
    var tags: [String]
    var title: String
  }

  /// The same record with a field more and one fewer: a field on one side only.
  struct LaterRecord: Codable, Sendable {
    var body: String
    var inner: Inner
    var pinned: Bool
    var title: String
  }

  static let original = Record(
    body: #"a "quoted", {braced} [listed] \ back"#, inner: Inner(values: [1, 2], label: "x,y}"),
    tags: ["a,b", "c]"], title: "first")

  @Test func onlyTheFieldsThatDifferAreShownInFieldOrder() throws {
    var edited = Self.original
    edited.title = "second"
    edited.inner.values.append(3)
    let changed = try #require(StateInspector.changedFields(before: Self.original, after: edited))
    #expect(changed.before == #"{"inner":{"label":"x,y}","values":[1,2]},"title":"first"}"#)
    #expect(changed.after == #"{"inner":{"label":"x,y}","values":[1,2,3]},"title":"second"}"#)
  }

  @Test func aChangeInsideAStringWithDelimitersIsOneField() throws {
    var edited = Self.original
    edited.body += ","
    let changed = try #require(StateInspector.changedFields(before: Self.original, after: edited))
    #expect(changed.before == #"{"body":"a \"quoted\", {braced} [listed] \\ back"}"#)
    #expect(changed.after == #"{"body":"a \"quoted\", {braced} [listed] \\ back,"}"#)
  }

  @Test func aFieldOnOneSideOnlyAppearsOnThatSide() throws {
    let later = LaterRecord(body: Self.original.body, inner: Self.original.inner, pinned: true, title: "first")
    let changed = try #require(StateInspector.changedFields(before: Self.original, after: later))
    #expect(changed.before == #"{"tags":["a,b","c]"]}"#)
    #expect(changed.after == #"{"pinned":true}"#)
  }

  @Test func equalVersionsAndValuesThatAreNotObjectsGiveNothing() {
    #expect(StateInspector.changedFields(before: Self.original, after: Self.original) == nil)
    #expect(StateInspector.changedFields(before: 1, after: 2) == nil)
    #expect(StateInspector.changedFields(before: Self.original, after: "text") == nil)
  }

  @Test func textThatIsNotOneObjectReadsAsNoMembers() {
    #expect(StateInspector.members(ofObject: "{}")?.isEmpty == true)
    for text in [
      "", "{", "[1]", #"{"a":1"#, #"{"a":1}}"#, #"{"a":"open}"#, #"{"a":}"#, #"{a:1}"#, #"{"a":1,}"#,
      #"{"a":1}{"b":2}"#,
    ] {
      #expect(StateInspector.members(ofObject: text) == nil, "\(text)")
    }
    let members = StateInspector.members(ofObject: #"{"a":[1,{"b":"}"}],"c":null}"#)
    #expect(members?.map(\.key) == [#""a""#, #""c""#])
    #expect(members?.map(\.value) == [#"[1,{"b":"}"}]"#, "null"])
  }
}
