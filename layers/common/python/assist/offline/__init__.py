"""Offline work: training, comparing and promoting the classifier; evaluating retrieval and fitting the verdict
(ADR 0094). The commands use it; the online path never imports it, and the function images leave it out."""
