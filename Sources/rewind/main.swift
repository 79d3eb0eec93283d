import RewindCLI
