package replay

import "time"

// PollLiterally makes cfg's polling Controller check every job at every
// poll interval up to until, instead of waiting for the job's end.
func PollLiterally(cfg *Config, until time.Time) { cfg.literalPolling = until }

// NextCheck is nextCheck, for its overflow test.
var NextCheck = nextCheck
