// A child process for the journal's crash and lock tests.
//
//   journal-crash-child append DIR always|batched|none THREADS [bulk] [compact]
//     Appends batches from THREADS threads until killed. After each acknowledgement it prints
//     "ack FIRST LAST TAG" on stdout and flushes, so the parent knows exactly what was acknowledged.
//     Record i of a batch has payload "TAG/i" (TAG = "t<thread>b<batch>"), then dots; with
//     `bulk`, then a dot and 8,000-20,000 bytes instead (`Bulk.tail`; batches of up to 160 KB: frames
//     of several blocks, compressed on several threads), 12 a thread, in segments of 1 MiB. With
//     `compact`, the writer compacts its sealed segments in the background as it appends.
//   journal-crash-child hold DIR
//     Opens the journal for writing, prints "locked", and waits to be killed.
// Either ends by itself once the process that started it is gone.
import Foundation
import RewindJournal
import RewindTestSupport

let arguments = CommandLine.arguments
func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data((message + "\n").utf8))
  exit(2)
}
guard arguments.count >= 3 else { fail("usage: journal-crash-child append DIR POLICY THREADS | hold DIR") }
let directory = arguments[2]
enum Output {
  static let lock = NSLock()

  /// One whole line on stdout, written with one call, so lines from threads never interleave.
  @Sendable static func say(_ line: String) {
    lock.lock()
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
    lock.unlock()
  }
}

enum Bulk {
  /// What follows "TAG/i" in a bulk record: a dot, then 8,000-20,000 bytes, random for even `i`
  /// (blocks stored raw), event-like text for odd `i` (blocks compressed).
  static func tail(_ i: Int, _ generator: inout SeededGenerator) -> [UInt8] {
    let count = Int.random(in: 8_000...20_000, using: &generator)
    return [0x2E] + (i % 2 == 0 ? generator.bytes(count) : generator.eventLikePayload(count))
  }
}

// This child runs until it is killed. Should its test process die first, it must not live on:
// it would keep appending, and keep the test run's standard error open, so that `swift test`
// waited for it for ever. It ends once its parent is gone (it is then another process's child).
let parent = getppid()
Thread.detachNewThread {
  while getppid() == parent { usleep(200_000) }
  _exit(0)
}

switch arguments[1] {
case "hold":
  do {
    let journal = try Journal(directory: directory)
    Output.say("locked")
    while true { sleep(60) }
    _ = journal
  } catch {
    fail("\(error)")
  }
case "append":
  let flags = Set(arguments.dropFirst(5))
  guard arguments.count >= 5, flags.isSubset(of: ["bulk", "compact"]), let threads = Int(arguments[4])
  else { fail("append needs DIR POLICY THREADS [bulk] [compact]") }
  let bulk = flags.contains("bulk")
  var options = JournalOptions()
  switch arguments[3] {
  case "always": options.durability = .always
  case "batched": options.durability = .batched(maxDelay: .milliseconds(1))
  case "none": options.durability = .none
  default: fail("unknown policy \(arguments[3])")
  }
  options.segmentTargetBytes = bulk ? 1 << 20 : 64 << 10
  options.compactsSealedSegments = flags.contains("compact")
  let journal: Journal
  do {
    journal = try Journal(directory: directory, options: options)
  } catch {
    fail("\(error)")
  }
  Output.say("open \(journal.lastSequence)")
  for thread in 0..<threads {
    Thread.detachNewThread {
      var system = SystemRandomNumberGenerator()
      var generator = SeededGenerator(seed: system.next())
      var batch = 0
      // Bulk appends stop after 12 a thread (under 8 MB), so a kill that comes late (a loaded
      // machine) does not let the journal grow without bound from trial to trial.
      while !bulk || batch < 12 {
        let tag = "t\(thread)b\(batch)"
        let count = Int.random(in: 1...8, using: &generator)
        let records = (0..<count).map { i in
          NewRecord(
            timestamp: Int64(batch),
            payload: Array("\(tag)/\(i)".utf8)
              + (bulk ? Bulk.tail(i, &generator) : [UInt8](repeating: 0x2E, count: i * 7)))
        }
        do {
          let range = try journal.appendAndWait(records)
          Output.say("ack \(range.lowerBound) \(range.upperBound) \(tag)")
        } catch {
          fail("append failed: \(error)")
        }
        batch += 1
      }
    }
  }
  while true { sleep(60) }
default:
  fail("unknown mode \(arguments[1])")
}
