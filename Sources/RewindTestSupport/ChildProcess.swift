import Foundation

/// A helper executable built alongside the tests, run as a child process whose stdout lines are
/// collected as they come, and which can be killed with SIGKILL at any moment.
public final class ChildProcess: @unchecked Sendable {
  // `lines` and `partial` are guarded by `lock`; `process` is set once in init.
  private let process = Process()
  private let lock = NSLock()
  private var collected: [String] = []
  private var partial = Data()

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
    pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
      let data = handle.availableData
      guard let self, !data.isEmpty else { return }
      self.lock.lock()
      self.partial.append(data)
      while let newline = self.partial.firstIndex(of: 0x0A) {
        self.collected.append(String(decoding: self.partial[self.partial.startIndex..<newline], as: UTF8.self))
        self.partial.removeSubrange(self.partial.startIndex...newline)
      }
      self.lock.unlock()
    }
    try process.run()
  }

  /// The complete lines printed so far.
  public var lines: [String] {
    lock.lock()
    defer { lock.unlock() }
    return collected
  }

  /// Waits (polling) until a line satisfies `condition` or `timeout` passes.
  public func waitForLine(timeout: Double = 30, where condition: (String) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
      if lines.contains(where: condition) { return true }
      if !process.isRunning { return lines.contains(where: condition) }
      usleep(2_000)
    }
    return false
  }

  /// SIGKILL, then waits for the process to end. Lines already printed stay in `lines`.
  public func kill() {
    if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    // Let the pipe's handler drain what the child wrote before it died.
    usleep(20_000)
  }

  public var isRunning: Bool { process.isRunning }

  deinit { if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) } }
}
