// The Notebook example domain.
