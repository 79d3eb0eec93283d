// swift-tools-version: 6.2
import PackageDescription

// Dependency arrows go one way: rewind → NotebookTool → {RewindCLI, Notebook} → Rewind → {RewindJournal → {CLZ4,
// CCRC32C, RewindLocking}, CSHA256}.
// RewindCLI knows no app: NotebookTool registers Notebook's model and adds its demo.
let strict: [SwiftSetting] = [
  .enableUpcomingFeature("InternalImportsByDefault"),
  .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
  name: "Rewind",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "RewindJournal", targets: ["RewindJournal"]),
    .library(name: "Rewind", targets: ["Rewind"]),
    .library(name: "Notebook", targets: ["Notebook"]),
    .library(name: "RewindCLI", targets: ["RewindCLI"]),
    .executable(name: "rewind", targets: ["rewind"]),
    .executable(name: "rewind-bench", targets: ["rewind-bench"]),
  ],
  targets: [
    .systemLibrary(
      name: "CLZ4",
      pkgConfig: "liblz4",
      providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
    ),
    // The core's only own C code, each for a CPU instruction Swift cannot reach: CRC-32C (SSE4.2,
    // ARMv8 CRC32C) and SHA-256's block function (x86-64 SHA extensions). Each has a portable
    // Swift version beside it, used where the CPU lacks the instructions.
    .target(name: "CCRC32C"),
    .target(name: "CSHA256"),
    // The package's own lock (`Lock`): `Mutex`, or a pthread mutex ThreadSanitizer sees under REWIND_TSAN. A
    // module of its own, not a product: public so that `withLock` is inlined into the modules that use it.
    .target(name: "RewindLocking", swiftSettings: strict),
    .target(name: "RewindJournal", dependencies: ["CLZ4", "CCRC32C", "RewindLocking"], swiftSettings: strict),
    // libsqlite3, for the benchmark's SQLite baseline only.
    .systemLibrary(
      name: "CSQLite",
      path: "Benchmarks/CSQLite",
      pkgConfig: "sqlite3",
      providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
    ),
    .target(name: "Rewind", dependencies: ["RewindJournal", "CSHA256", "RewindLocking"], swiftSettings: strict),
    // Notebook is "any app": it uses Rewind and the journal's public options, nothing more.
    .target(name: "Notebook", dependencies: ["Rewind", "RewindJournal"], swiftSettings: strict),
    .target(name: "RewindCLI", dependencies: ["Rewind", "RewindJournal", "RewindLocking"], swiftSettings: strict),
    .target(
      name: "NotebookTool",
      dependencies: ["Notebook", "RewindCLI", "Rewind", "RewindJournal"],
      swiftSettings: strict
    ),
    .executableTarget(name: "rewind", dependencies: ["NotebookTool"], swiftSettings: strict),
    .target(
      name: "RewindTestSupport",
      dependencies: ["Rewind", "RewindJournal", "RewindLocking"],
      swiftSettings: strict
    ),
    // Throughput of append, replay and seek, side by side with SQLite, JSON lines and the lz4 tool.
    .executableTarget(
      name: "rewind-bench",
      dependencies: ["RewindJournal", "Rewind", "Notebook", "CSQLite", "CLZ4"],
      path: "Benchmarks/Sources",
      swiftSettings: strict
    ),
    // A child process for the crash tests: appends and reports each acknowledgement on stdout.
    .executableTarget(
      name: "journal-crash-child",
      dependencies: ["RewindJournal", "RewindTestSupport"],
      path: "Tests/JournalCrashChild",
      swiftSettings: strict
    ),
    // A child process for the replay tests: replays in a second process, measures peak memory.
    .executableTarget(
      name: "replay-child",
      dependencies: ["Notebook", "Rewind"],
      path: "Tests/ReplayChild",
      swiftSettings: strict
    ),
    // An app's own rewind, as the README shows: the tool with Notebook's Workspace registered.
    .executableTarget(
      name: "notebook-rewind",
      dependencies: ["RewindCLI", "Notebook", "Rewind"],
      path: "Tests/NotebookRewind",
      swiftSettings: strict
    ),
    .testTarget(
      name: "RewindCLITests",
      dependencies: [
        "RewindCLI", "RewindJournal", "RewindTestSupport", "rewind", "Notebook", "Rewind", "notebook-rewind",
      ],
      swiftSettings: strict
    ),
    .testTarget(
      name: "RewindJournalTests",
      dependencies: ["RewindJournal", "RewindTestSupport", "journal-crash-child"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "RewindTests", dependencies: ["Rewind", "RewindTestSupport", "RewindLocking"], swiftSettings: strict),
    // The benchmark harness's arithmetic (percentiles, medians of rounds, ratios, targets).
    .testTarget(name: "BenchmarkTests", dependencies: ["rewind-bench", "RewindTestSupport"], swiftSettings: strict),
    .testTarget(
      name: "NotebookTests",
      dependencies: ["Notebook", "Rewind", "RewindTestSupport", "replay-child"],
      swiftSettings: strict
    ),
  ]
)

// libFuzzer targets, only when REWIND_FUZZ is set: `make fuzz` builds them with
// -sanitize=fuzzer,address into their own scratch path (.build/fuzz). A plain `swift build` or
// `swift test` never sees them. See docs/RELIABILITY.md.
if Context.environment["REWIND_FUZZ"] != nil {
  let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
    ("FuzzFrames", ["RewindJournal"]),
    ("FuzzEvents", ["Rewind", "RewindJournal", "Notebook"]),
    ("FuzzSnapshots", ["Rewind", "Notebook"]),
    ("FuzzArguments", ["RewindCLI"]),
  ]
  // libFuzzer's driver, declared for Swift (the library itself comes with -sanitize=fuzzer).
  package.targets.append(.systemLibrary(name: "CFuzzer", path: "Fuzz/CFuzzer"))
  // The command line, seeds and file helpers every target shares.
  package.targets.append(
    .target(name: "FuzzSupport", dependencies: ["CFuzzer"], path: "Fuzz/FuzzSupport", swiftSettings: strict))
  for target in fuzzTargets {
    package.targets.append(
      .executableTarget(
        name: target.name, dependencies: target.dependencies + ["FuzzSupport"], path: "Fuzz/\(target.name)",
        swiftSettings: strict))
  }
}
