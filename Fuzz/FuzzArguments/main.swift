import FuzzSupport

runFuzzer(writeSeeds: writeSeeds(to:), target: fuzzArguments)
