import Testing

@testable import RewindCLI

/// The memory `prepare`'s default limit is a quarter of: the machine's, or its control group's
/// limit where that is smaller, read from files given here as text.
@Suite struct AvailableMemoryTests {
  let machine: UInt64 = 64_000_000_000

  /// What a process in the groups `cgroup` lists (as `/proc/self/cgroup` would) may use, with
  /// the control group files `files` holds.
  func available(_ cgroup: String?, _ files: [String: String] = [:]) -> UInt64 {
    AvailableMemory.bytes(physical: machine) { $0 == "/proc/self/cgroup" ? cgroup : files[$0] }
  }

  @Test func noControlGroupLeavesTheMachinesMemory() {
    #expect(available(nil) == machine)
    #expect(available("garbage\n") == machine)
  }

  @Test func versionTwoTakesTheSmallestLimitOfTheGroupAndTheGroupsAboveIt() {
    let cgroup = "0::/system.slice/app.service\n"
    let service = "/sys/fs/cgroup/system.slice/app.service/memory.max"
    let slice = "/sys/fs/cgroup/system.slice/memory.max"
    #expect(available(cgroup, [service: "max\n"]) == machine)
    #expect(available(cgroup, [service: "2147483648\n"]) == 2_147_483_648)
    #expect(available(cgroup, [service: "max\n", slice: "4000000000\n"]) == 4_000_000_000)
    #expect(available(cgroup, [service: "3000000000\n", slice: "4000000000\n"]) == 3_000_000_000)
    // A container sees its own group as the root: the path is not under the mount.
    #expect(available(cgroup, ["/sys/fs/cgroup/memory.max": "1000000000\n"]) == 1_000_000_000)
    // A limit above the machine's memory limits nothing.
    #expect(available(cgroup, [slice: "100000000000\n"]) == machine)
  }

  @Test func versionOneTakesTheDeepestGroupsHierarchicalLimit() {
    let cgroup = "5:cpu,cpuacct:/x\n4:memory:/process_api/job\n0::/\n"
    let job = "/sys/fs/cgroup/memory/process_api/job/memory.stat"
    let stat = { (limit: String) in "cache 0\nrss 0\nhierarchical_memory_limit \(limit)\ntotal_rss 0\n" }
    #expect(available(cgroup, [job: stat("3000000000")]) == 3_000_000_000)
    // No limit reads as a number near 2^63.
    #expect(available(cgroup, [job: stat("9223372036854771712")]) == machine)
    // The deepest group the mount shows, here the root of a container's view.
    let root = "/sys/fs/cgroup/memory/memory.stat"
    let above = "/sys/fs/cgroup/memory/process_api/memory.stat"
    #expect(available(cgroup, [root: stat("5000000000"), above: stat("6000000000")]) == 6_000_000_000)
    // Another hierarchy's files are not read as memory's.
    #expect(available(cgroup, ["/sys/fs/cgroup/memory/x/memory.stat": stat("1000")]) == machine)
  }

  @Test func theDefaultLimitIsAQuarterOfWhatThisProcessMayUseInWholeMegabytes() {
    let limit = DebugSession.defaultKeyframeLimit
    #expect(limit > 0)
    #expect(limit % 1_000_000 == 0)
    #expect(UInt64(limit) <= AvailableMemory.bytes / 4)
    #expect(UInt64(limit) + 1_000_000 > AvailableMemory.bytes / 4)
  }
}
