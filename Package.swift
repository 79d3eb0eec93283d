// swift-tools-version: 6.0
import PackageDescription

let strict: [SwiftSetting] = [
  .enableUpcomingFeature("InternalImportsByDefault"),
  .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
  name: "Rewind",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "Rewind", targets: ["Rewind"]),
    .library(name: "Notebook", targets: ["Notebook"]),
  ],
  targets: [
    .target(name: "Rewind", swiftSettings: strict),
    .target(name: "Notebook", dependencies: ["Rewind"], swiftSettings: strict),
    .testTarget(name: "RewindTests", dependencies: ["Rewind"], swiftSettings: strict),
  ]
)
