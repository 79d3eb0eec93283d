import Foundation
import Rewind

/// A helper executable built alongside the tests, run as a child process whose stdout lines are
/// collected as they come, and which can be killed with SIGKILL at any moment.
public final class ChildProcess: @unchecked Sendable {
  // `process` and `output` are set once in init; `output` locks itself. The reader thread alone
  // touches the pipe's read end, and does not keep `self` alive. The waits below poll with
  // `Task.sleep` rather than block: a test blocked in them would hold one of the few threads of
  // Swift concurrency's cooperative pool and starve every other test running beside it.
  private let process = Process()
  private let output = LineBuffer()

  /// Finds an executable product built next to the running test bundle.
  public static func builtProduct(_ name: String) -> String? {
    var candidates: [URL] = []
    let argument0 = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
    candidates.append(argument0.deletingLastPathComponent().appendingPathComponent(name))
    if let bundle = Bundle.main.executableURL {
      candidates.append(bundle.deletingLastPathComponent().appendingPathComponent(name))
    }
    // xctest bundles on Linux live at .build/<config>/<Package>PackageTests.xctest
    candidates.append(argument0.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(name))
    return candidates.map(\.path).first { FileManager.default.isExecutableFile(atPath: $0) }
  }

  public init(executable: String, arguments: [String]) throws {
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.standardError
    try process.run()
    // Our copy of the write end must go, or the reader would never see the end of the output.
    try? pipe.fileHandleForWriting.close()
    // A plain thread with blocking reads, not `readabilityHandler`: a dispatch source left on the
    // pipe's descriptor outlived it and crashed libdispatch once the number was reused.
    let reading = pipe.fileHandleForReading
    let output = output
    Thread.detachNewThread {
      var partial = Data()
      while true {
        let data = PipeReads.some(reading)
        if data.isEmpty { break }
        partial.append(data)
        var lines: [String] = []
        while let newline = partial.firstIndex(of: 0x0A) {
          lines.append(String(decoding: partial[partial.startIndex..<newline], as: UTF8.self))
          partial.removeSubrange(partial.startIndex...newline)
        }
        output.append(lines)
      }
      try? reading.close()
      output.end()
    }
  }

  /// The complete lines printed so far.
  public var lines: [String] { output.lines }

  /// Waits (polling, with `Task.sleep`: no thread is held) until a line satisfies `condition` or
  /// `timeout` passes.
  public func waitForLine(timeout: Double = 30, where condition: (String) -> Bool) async throws -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
      if lines.contains(where: condition) { return true }
      if !process.isRunning {
        // It ended; its last lines may still be in the pipe: wait for the reader to reach the end.
        try await waitForOutput(until: deadline)
        return lines.contains(where: condition)
      }
      try await Task.sleep(for: .milliseconds(2))
    }
    // A sleep can end long after its time when the pool is busy: look once more at the deadline.
    return lines.contains(where: condition)
  }

  /// SIGKILL, then waits for the process to end and for everything it printed to be read.
  /// Lines already printed stay in `lines`.
  /// - Throws: `WaitGaveUp` if the output had not ended within `testWaitBound` (a process the
  ///   child started that still holds the pipe open).
  public func kill() async throws {
    if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
    while process.isRunning { try await Task.sleep(for: .milliseconds(1)) }
    try await waitForOutput(until: testWaitDeadline())
    if !output.ended { throw WaitGaveUp(waitingFor: "the end of a killed child's output", saw: "it still open") }
  }

  /// Waits for the process to end by itself (SIGKILL after `timeout` seconds) and for its output
  /// to be read. Returns whether it exited on its own with status 0.
  public func waitForExit(timeout: Double = 300) async throws -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
    let finished = !process.isRunning
    try await kill()
    return finished && process.terminationReason == .exit && process.terminationStatus == 0
  }

  /// Polls until the reader thread has reached the end of the output, or `deadline` passes.
  private func waitForOutput(until deadline: Date) async throws {
    while !output.ended && Date() < deadline { try await Task.sleep(for: .milliseconds(1)) }
  }

  public var isRunning: Bool { process.isRunning }

  /// The status the child exited with; nil while it runs, and when a signal ended it.
  public var exitStatus: Int32? {
    process.isRunning || process.terminationReason != .exit ? nil : process.terminationStatus
  }

  /// The child's process id, for a signal a test sends it while it runs.
  public var processIdentifier: Int32 { process.processIdentifier }

  deinit { if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) } }
}

/// Lines read from a child, shared between its reader thread and the test.
private final class LineBuffer: @unchecked Sendable {
  // `collected` and `reachedEnd` are guarded by `lock`.
  private let lock = NSLock()
  private var collected: [String] = []
  private var reachedEnd = false

  /// The reader reached the end of the output: every line is in `lines`.
  func end() {
    lock.lock()
    reachedEnd = true
    lock.unlock()
  }

  var ended: Bool {
    lock.lock()
    defer { lock.unlock() }
    return reachedEnd
  }

  func append(_ lines: [String]) {
    lock.lock()
    collected += lines
    lock.unlock()
  }

  var lines: [String] {
    lock.lock()
    defer { lock.unlock() }
    return collected
  }
}
