import Foundation
import Glibc

/// Starting a thread of the package's own (the journal's writer, replay's reader, compaction,
/// the digest of a checkpoint). Foundation's `Thread.start()` ignores `pthread_create`'s failure
/// on Linux (EAGAIN when a process or container limit is reached, ENOMEM for the stack): the
/// thread never runs and whoever waits for it waits for ever (a replay stuck before its first
/// batch, an append never written). `Threads.start` throws instead, so each caller can go on
/// without the thread or fail, located.
package enum Threads {
  /// Refuses every start made within a task that sets it (`$refusingStarts.withValue(true)`),
  /// with EAGAIN, as a process at its thread limit is refused: for tests of what callers do then.
  /// A task-local value, so tests running alongside are not touched.
  @TaskLocal package static var refusingStarts = false

  /// Runs `body` on a new, detached thread named `name` (its first 15 bytes: the kernel's limit).
  /// - Throws: `SystemCallError` (`pthread_create for NAME`, its errno) when the thread cannot be
  ///   made; `body` is then never run.
  package static func start(named name: String, _ body: @escaping @Sendable () -> Void) throws(SystemCallError) {
    if refusingStarts { throw SystemCallError("pthread_create", path: "for " + name, errno: EAGAIN) }
    let work = Unmanaged.passRetained(Work(name: name, body: body))
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let result = pthread_create(
      &thread, &attributes,
      { context in
        let work = Unmanaged<Work>.fromOpaque(context!).takeRetainedValue()
        // Named through Foundation, which sets the kernel's name of the thread it runs on
        // (`pthread_setname_np` is not in the Glibc module), for profiles and debuggers.
        Thread.current.name = work.name
        work.body()
        return nil
      }, work.toOpaque())
    guard result == 0 else {
      work.release()
      throw SystemCallError("pthread_create", path: "for " + name, errno: result)
    }
  }

  /// What a started thread runs, handed over through `pthread_create`'s one pointer.
  private final class Work {
    /// At most 15 bytes, cut at a character boundary.
    let name: String
    let body: @Sendable () -> Void

    init(name: String, body: @escaping @Sendable () -> Void) {
      var cut = Substring(name)
      while cut.utf8.count > 15 { cut = cut.dropLast() }
      self.name = String(cut)
      self.body = body
    }
  }
}
