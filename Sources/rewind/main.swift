import Foundation
import RewindCLI

let code = await RewindTool().run(Array(CommandLine.arguments.dropFirst()))
exit(code)
