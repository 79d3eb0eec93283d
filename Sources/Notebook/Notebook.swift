// Notebook: the example domain (filled in below).
