import Foundation
import NotebookTool

let code = await NotebookTool.tool.runCommandLine()
exit(code)
