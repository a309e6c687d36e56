package node

import "maps"

// onceEvery lets each key through at most once per period: the warnings
// and notes the node repeats for as long as their cause lasts (a raft id
// it cannot address, a retired node that still runs). It holds only the
// keys let through within the last period of the calls that let one
// through. Only its owner's methods change it.
type onceEvery[K comparable] map[K]int64

// due reports whether key may go through at nowMs, its last time being at
// least everyMs ago, and if so records nowMs for it and drops the keys
// whose period has passed.
func (o onceEvery[K]) due(key K, nowMs, everyMs int64) bool {
	if at, ok := o[key]; ok && nowMs-at < everyMs {
		return false
	}
	o.prune(nowMs, everyMs)
	o[key] = nowMs
	return true
}

// prune drops the keys whose period has passed at nowMs.
func (o onceEvery[K]) prune(nowMs, everyMs int64) {
	maps.DeleteFunc(o, func(_ K, at int64) bool { return nowMs-at >= everyMs })
}
