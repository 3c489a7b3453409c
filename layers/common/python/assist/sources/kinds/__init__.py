"""The source kinds that come with assist, each a class in a file of its own registered under its name
(assist.sources.registry); assist.sources.resolve imports them, and guesses among them."""
