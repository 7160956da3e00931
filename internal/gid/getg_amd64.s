#include "textflag.h"

// func getg() uintptr
TEXT ·getg(SB),NOSPLIT,$0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET

// func stack() (used, size uintptr)
//
// The runtime's g begins with its stack's bounds, lo then hi; the
// compiler's stack checks rely on that layout (they read stackguard0,
// the word after them). used runs from hi down to the caller's stack
// pointer: the address of this function's arguments, just above the
// return address the call pushed.
TEXT ·stack(SB),NOSPLIT,$0-16
	MOVQ (TLS), AX
	MOVQ 8(AX), BX
	MOVQ BX, CX
	SUBQ 0(AX), CX
	LEAQ used+0(FP), DX
	SUBQ DX, BX
	MOVQ BX, used+0(FP)
	MOVQ CX, size+8(FP)
	RET
