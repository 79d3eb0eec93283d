import Foundation
import RewindJournal
import RewindTestSupport
import Testing

@testable import RewindCLI

/// `rewind verify` and `rewind repair` of a journal whose only damage is a flipped bit in its
/// segment header (RELIABILITY 370): verify says repair keeps every segment, the plan says the
/// header will be written again and where the journal will end, and the repair gives back every
/// event, the damaged bytes kept in `quarantine/`. Repair used to move the whole segment aside
/// ("the journal would then end at sequence 0").
@Suite struct SegmentHeaderRepairCommandTests {
  @Test func aDamagedSegmentHeaderIsWrittenAgainByRepair() async throws {
    let directory = TemporaryDirectory("cli-segment-header")
    // A name with a space: verify's advice quotes it for the shell (helper-222).
    let path = directory.appending("the journal")
    let demo = try await ToolRun.run(
      "rewind", ["demo", path, "--events", "2000", "--seed", "4", "--durability", "none"])
    try #require(demo.status == 0, "\(demo.err)")
    let segment = try #require(Files.list(path).first { $0.hasSuffix(".lz4") })
    let last = try JournalReader(directory: path).lastSequence()
    let export = try await ToolRun.run("rewind", ["export", path, "--jsonl"])
    try #require(export.status == 0, "\(export.err)")
    var bytes = try Files.read(path + "/" + segment)
    bytes[37] ^= 0x01  // inside the first sequence number
    try Files.write(bytes, to: path + "/" + segment)

    let verify = try await ToolRun.run("rewind", ["verify", path])
    #expect(verify.status == 1, "\(verify.out)\(verify.err)")
    #expect(verify.out.contains("repair writes it again"), "\(verify.out)")
    #expect(
      verify.out.contains("`rewind repair '\(path)'` writes the damaged segment header again, keeping every segment."),
      "\(verify.out)")

    let plan = try await ToolRun.run("rewind", ["repair", path])
    #expect(plan.status == 1, "\(plan.out)\(plan.err)")
    #expect(plan.out.contains("will write the segment header of \(segment) again"), "\(plan.out)")
    #expect(plan.out.contains("the journal would then end at sequence \(last)"), "\(plan.out)")
    #expect(!plan.out.contains("will move"), "\(plan.out)")

    let repair = try await ToolRun.run("rewind", ["repair", path, "--yes"])
    #expect(repair.status == 0, "\(repair.out)\(repair.err)")
    #expect(
      repair.out.contains("wrote the segment header of \(segment) again"), "\(repair.out)")
    #expect(repair.out.contains("quarantine/\(segment).header"), "\(repair.out)")
    #expect(repair.out.contains("repaired: the journal ends at sequence \(last)"), "\(repair.out)")
    #expect(Files.list(path + "/quarantine") == [segment + ".header"])
    #expect(try await ToolRun.run("rewind", ["verify", path]).status == 0)
    let again = try await ToolRun.run("rewind", ["export", path, "--jsonl"])
    #expect(again.out == export.out, "every event back")
  }

  /// The commands the tools suggest name the journal as one word a shell reads back as it.
  @Test func aSuggestedCommandNamesThePathAsOneShellWord() {
    #expect(shellWord("/tmp/j") == "/tmp/j")
    #expect(shellWord("notes/v2_a-b.c:d,e@f%g+h=i") == "notes/v2_a-b.c:d,e@f%g+h=i")
    #expect(shellWord("paths/dm g") == "'paths/dm g'")
    #expect(shellWord("paths/$(id)") == "'paths/$(id)'")
    #expect(shellWord("it's") == #"'it'"'"'s'"#)
    #expect(shellWord("-dash") == "./-dash")
    #expect(shellWord("-a b") == "'./-a b'")
    #expect(shellWord("é") == "'é'")
    #expect(shellWord("") == "''")
    // Shown through `visible`, as every message is, the word is unchanged (a backslash in it
    // would be doubled: helper-226 pasted `'it'\\''s'`), and a shell reads it back.
    for path in ["it's", "a 'b' c", "''", "$(id) x", "-a b"] {
      let word = shellWord(path)
      #expect(visible(word) == word, "\(word)")
      let shell = Process()
      shell.executableURL = URL(fileURLWithPath: "/bin/sh")
      shell.arguments = ["-c", "printf %s " + word]
      let pipe = Pipe()
      shell.standardOutput = pipe
      try? shell.run()
      shell.waitUntilExit()
      let read = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      #expect(read == (path.hasPrefix("-") ? "./" + path : path), "\(word)")
    }
  }
}
