import Foundation
import NotebookTool

let code = await NotebookTool.tool.run(Array(CommandLine.arguments.dropFirst()))
exit(code)
