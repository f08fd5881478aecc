//go:build amd64 && !purego

#include "textflag.h"

// func prefetchIdx8(base *uint64, idx []uint32)
TEXT ·prefetchIdx8(SB), NOSPLIT, $0-32
	MOVQ base+0(FP), AX
	MOVQ idx_base+8(FP), BX
	MOVQ idx_len+16(FP), CX
	TESTQ CX, CX
	JEQ done
loop:
	MOVLQZX (BX), DX
	PREFETCHT0 (AX)(DX*8)
	ADDQ $4, BX
	DECQ CX
	JNE loop
done:
	RET

// func prefetchRows(base *int32, rows []int32, k int)
TEXT ·prefetchRows(SB), NOSPLIT, $0-40
	MOVQ base+0(FP), AX
	MOVQ rows_base+8(FP), BX
	MOVQ rows_len+16(FP), CX
	MOVQ k+32(FP), R8
	SHLQ $2, R8          // row stride in bytes
	LEAQ -4(AX)(R8*1), R9 // base of each row's last slot
	TESTQ CX, CX
	JEQ done
loop:
	MOVLQSX (BX), DX
	IMULQ R8, DX
	PREFETCHT0 (AX)(DX*1)
	PREFETCHT0 (R9)(DX*1)
	ADDQ $4, BX
	DECQ CX
	JNE loop
done:
	RET
