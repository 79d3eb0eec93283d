public enum RewindCommand {}
