-- rules.lua — the default rule pack (placeholder until the first rules land).
thresholds {}
