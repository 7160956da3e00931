#include "textflag.h"

// func getg() uintptr
TEXT ·getg(SB),NOSPLIT,$0-8
	MOVD g, R0
	MOVD R0, ret+0(FP)
	RET

// func stack() (used, size uintptr)
//
// The runtime's g begins with its stack's bounds, lo then hi; the
// compiler's stack checks rely on that layout (they read stackguard0,
// the word after them). used runs from hi down to the caller's frame:
// this function has no frame of its own, so RSP is the caller's.
TEXT ·stack(SB),NOSPLIT,$0-16
	MOVD 8(g), R0
	MOVD 0(g), R1
	SUB R1, R0, R1
	MOVD RSP, R2
	SUB R2, R0, R0
	MOVD R0, used+0(FP)
	MOVD R1, size+8(FP)
	RET
