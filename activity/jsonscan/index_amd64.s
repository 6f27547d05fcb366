#include "go_asm.h"
#include "textflag.h"

// Sixteen copies of a quote, a backslash and 0x20.
DATA quotes16<>+0(SB)/8, $0x2222222222222222
DATA quotes16<>+8(SB)/8, $0x2222222222222222
GLOBL quotes16<>(SB), (RODATA|NOPTR), $16
DATA backslashes16<>+0(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA backslashes16<>+8(SB)/8, $0x5c5c5c5c5c5c5c5c
GLOBL backslashes16<>(SB), (RODATA|NOPTR), $16
DATA spaces16<>+0(SB)/8, $0x2020202020202020
DATA spaces16<>+8(SB)/8, $0x2020202020202020
GLOBL spaces16<>(SB), (RODATA|NOPTR), $16

// The sixteen bytes in X0 become, in DX, a bit per byte that is a quote or a backslash (X2, X3
// hold sixteen of each).
#define QUOTES \
	MOVOU X0, X1; \
	PCMPEQB X2, X0; \
	PCMPEQB X3, X1; \
	POR X1, X0; \
	PMOVMSKB X0, DX

// NOTPLAIN is QUOTES that also marks a control character or a byte outside ASCII (X4 holds
// sixteen 0x20: 0x20 > byte, signed, is true for both).
#define NOTPLAIN \
	MOVOU X0, X1; \
	MOVOU X4, X5; \
	PCMPGTB X0, X5; \
	PCMPEQB X2, X0; \
	PCMPEQB X3, X1; \
	POR X1, X0; \
	POR X5, X0; \
	PMOVMSKB X0, DX

// TAILONLY drops from DX, the mask of d's last sixteen bytes (length BX), the bits of the bytes
// before AX.
#define TAILONLY \
	MOVQ AX, CX; \
	SUBQ BX, CX; \
	ADDQ $16, CX; \
	SHRL CX, DX

// func indexQuote(d []byte, i int) int
TEXT ·indexQuote(SB), NOSPLIT, $0-40
	MOVQ d_base+0(FP), SI
	MOVQ d_len+8(FP), BX
	MOVQ i+24(FP), AX
	MOVOU quotes16<>(SB), X2
	MOVOU backslashes16<>(SB), X3

qloop:
	LEAQ 16(AX), CX
	CMPQ CX, BX
	JGT  qtail
	MOVOU (SI)(AX*1), X0
	QUOTES
	TESTL DX, DX
	JNZ  qfound
	MOVQ CX, AX
	JMP  qloop

qtail:
	// Fewer than sixteen bytes from AX on.
	CMPQ AX, BX
	JGE  qnone
	CMPQ BX, $16
	JLT  qshort
	// The last sixteen bytes of d; the first 16-(len-AX) of them come before AX.
	MOVOU -16(SI)(BX*1), X0
	QUOTES
	TAILONLY
	TESTL DX, DX
	JZ   qnone

qfound:
	BSFL DX, DX
	ADDQ DX, AX
	MOVQ AX, ret+32(FP)
	RET

qshort:
	// d is shorter than sixteen bytes: one byte at a time.
	MOVBLZX (SI)(AX*1), DX
	CMPB DX, $0x22
	JEQ  qdone
	CMPB DX, $0x5c
	JEQ  qdone
	INCQ AX
	CMPQ AX, BX
	JLT  qshort

qnone:
	MOVQ BX, AX

qdone:
	MOVQ AX, ret+32(FP)
	RET

// func indexNotPlain(d []byte, i int) int
TEXT ·indexNotPlain(SB), NOSPLIT, $0-40
	MOVQ d_base+0(FP), SI
	MOVQ d_len+8(FP), BX
	MOVQ i+24(FP), AX
	MOVOU quotes16<>(SB), X2
	MOVOU backslashes16<>(SB), X3
	MOVOU spaces16<>(SB), X4

ploop:
	LEAQ 16(AX), CX
	CMPQ CX, BX
	JGT  ptail
	MOVOU (SI)(AX*1), X0
	NOTPLAIN
	TESTL DX, DX
	JNZ  pfound
	MOVQ CX, AX
	JMP  ploop

ptail:
	CMPQ AX, BX
	JGE  pnone
	CMPQ BX, $16
	JLT  pcap
	MOVOU -16(SI)(BX*1), X0
	NOTPLAIN
	TAILONLY
	TESTL DX, DX
	JZ   pnone

pfound:
	BSFL DX, DX
	ADDQ DX, AX
	MOVQ AX, ret+32(FP)
	RET

pcap:
	// d is shorter than sixteen bytes: the sixteen from AX on when d's capacity holds them, the
	// bits of those past len(d) dropped, else one byte at a time.
	MOVQ d_cap+16(FP), CX
	SUBQ AX, CX
	CMPQ CX, $16
	JLT  pshort
	MOVOU (SI)(AX*1), X0
	NOTPLAIN
	MOVQ BX, CX
	SUBQ AX, CX
	MOVL $1, R8
	SHLL CX, R8
	DECL R8
	ANDL R8, DX
	TESTL DX, DX
	JZ   pnone
	JMP  pfound

pshort:
	MOVBLZX (SI)(AX*1), DX
	CMPB DX, $0x22
	JEQ  pdone
	CMPB DX, $0x5c
	JEQ  pdone
	CMPB DX, $0x20
	JCS  pdone // below 0x20
	CMPB DX, $0x80
	JCC  pdone // 0x80 or above
	INCQ AX
	CMPQ AX, BX
	JLT  pshort

pnone:
	MOVQ BX, AX

pdone:
	MOVQ AX, ret+32(FP)
	RET

// func compactKey(d []byte, i int, begun, values bool) (start, end, value, vend int)
TEXT ·compactKey(SB), NOSPLIT, $0-72
	MOVQ $0, start+40(FP)
	MOVQ $0, end+48(FP)
	MOVQ $0, value+56(FP)
	MOVQ $0, vend+64(FP)
	MOVQ d_base+0(FP), SI
	MOVQ d_len+8(FP), BX
	MOVQ i+24(FP), AX
	CMPQ AX, BX
	JGE  kdone
	CMPB (SI)(AX*1), $0x7d // '}'
	JEQ  kclose
	MOVBLZX begun+32(FP), CX
	TESTQ CX, CX
	JZ   kquote
	CMPB (SI)(AX*1), $0x2c // ','
	JNE  kdone
	INCQ AX
	CMPQ AX, BX
	JGE  kdone

kquote:
	CMPB (SI)(AX*1), $0x22
	JNE  kdone
	INCQ AX
	MOVQ AX, R8
	MOVOU quotes16<>(SB), X2
	MOVOU backslashes16<>(SB), X3

kloop:
	LEAQ 16(AX), CX
	CMPQ CX, BX
	JGT  ktail
	MOVOU (SI)(AX*1), X0
	QUOTES
	TESTL DX, DX
	JNZ  kfound
	MOVQ CX, AX
	JMP  kloop

ktail:
	// Fewer than sixteen bytes from AX on: the last sixteen bytes of d, without those before AX.
	CMPQ BX, $16
	JLT  kdone
	CMPQ AX, BX
	JGE  kdone
	MOVOU -16(SI)(BX*1), X0
	QUOTES
	TAILONLY
	TESTL DX, DX
	JZ   kdone

kfound:
	BSFL DX, DX
	ADDQ DX, AX
	CMPB (SI)(AX*1), $0x22
	JNE  kdone // a backslash: the key is unescaped the general way
	MOVQ AX, R9
	INCQ AX
	CMPQ AX, BX
	JGE  kdone
	CMPB (SI)(AX*1), $0x3a // ':'
	JNE  kdone
	INCQ AX
	CMPQ AX, BX
	JGE  kdone
	CMPB (SI)(AX*1), $0x20
	JLS  kdone // whitespace (or a control character) after the colon
	MOVQ R8, start+40(FP)
	MOVQ R9, end+48(FP)
	MOVQ AX, value+56(FP)
	MOVBLZX values+33(FP), CX
	TESTQ CX, CX
	JZ   kdone
	CMPB (SI)(AX*1), $0x22
	JNE  kdone
	INCQ AX
	MOVOU spaces16<>(SB), X4

vloop:
	LEAQ 16(AX), CX
	CMPQ CX, BX
	JGT  vtail
	MOVOU (SI)(AX*1), X0
	NOTPLAIN
	TESTL DX, DX
	JNZ  vfound
	MOVQ CX, AX
	JMP  vloop

vtail:
	CMPQ BX, $16
	JLT  kdone
	CMPQ AX, BX
	JGE  kdone
	MOVOU -16(SI)(BX*1), X0
	NOTPLAIN
	TAILONLY
	TESTL DX, DX
	JZ   kdone

vfound:
	BSFL DX, DX
	ADDQ DX, AX
	CMPB (SI)(AX*1), $0x22
	JNE  kdone // not a plain string: skipped the general way
	INCQ AX
	MOVQ AX, vend+64(FP)

kdone:
	RET

kclose:
	MOVQ $-1, value+56(FP)
	RET

// func compactRun(o *Object, run []Span) (n int, done bool)
// compactKey with values in a loop over o's members; DI holds o, R10 points at the next Span of
// run, R12 counts the members read and R13 is where o resumes (the general way, when the next
// member is not read here).
TEXT ·compactRun(SB), NOSPLIT, $0-41
	MOVQ o+0(FP), DI
	MOVQ Object_d(DI), SI
	MOVQ Object_d+8(DI), BX
	MOVQ Object_i(DI), AX
	MOVBLZX Object_begun(DI), CX
	MOVQ run_base+8(FP), R10
	MOVQ run_len+16(FP), R11
	XORQ R12, R12
	MOVB $0, done+40(FP)
	MOVQ AX, R13
	MOVOU quotes16<>(SB), X2
	MOVOU backslashes16<>(SB), X3
	MOVOU spaces16<>(SB), X4
	TESTQ R11, R11
	JEQ  rstop
	CMPQ AX, BX
	JGE  rstop
	TESTQ CX, CX
	JNZ  rmember
	CMPB (SI)(AX*1), $0x7d // '}'
	JEQ  rclose

rquote:
	// The first member: no ',' before it.
	CMPB (SI)(AX*1), $0x22
	JNE  rstop
	INCQ AX
	MOVQ AX, R8
	JMP  rkloop

rmember:
	// A member has been read: ',"' (read as one word) or the closing brace is next.
	MOVQ AX, R13
	CMPQ R12, R11
	JGE  rstop
	LEAQ 2(AX), CX
	CMPQ CX, BX
	JGT  rlast
	CMPW (SI)(AX*1), $0x222c
	JNE  rbrace
	MOVQ CX, AX
	MOVQ AX, R8

rkloop:
	LEAQ 16(AX), CX
	CMPQ CX, BX
	JGT  rktail
	MOVOU (SI)(AX*1), X0
	QUOTES
	TESTL DX, DX
	JNZ  rkfound
	MOVQ CX, AX
	JMP  rkloop

rlast:
	// Fewer than two bytes left: only the closing brace can be read.
	CMPQ AX, BX
	JGE  rstop

rbrace:
	CMPB (SI)(AX*1), $0x7d // '}'
	JEQ  rclose
	JMP  rstop

rktail:
	CMPQ BX, $16
	JLT  rstop
	CMPQ AX, BX
	JGE  rstop
	MOVOU -16(SI)(BX*1), X0
	QUOTES
	TAILONLY
	TESTL DX, DX
	JZ   rstop

rkfound:
	BSFL DX, DX
	ADDQ DX, AX
	CMPB (SI)(AX*1), $0x22
	JNE  rstop // a backslash: the key is unescaped the general way
	MOVQ AX, R9
	ADDQ $2, AX
	CMPQ AX, BX
	JGE  rstop
	CMPB -1(SI)(AX*1), $0x3a // ':'
	JNE  rstop
	CMPB (SI)(AX*1), $0x22
	JEQ  rstring
	CMPB (SI)(AX*1), $0x20
	JLS  rstop // whitespace (or a control character) after the colon

	// The member is read, its value is not a string: run[n] = {R8, R9, AX, 0}, and the caller
	// skips or enters the value.
	MOVQ R8, Span_KeyStart(R10)
	MOVQ R9, Span_KeyEnd(R10)
	MOVQ AX, Span_Value(R10)
	ADDQ $Span__size, R10
	INCQ R12
	MOVQ AX, R13
	JMP  rvstop

rstring:
	// The member is read: run[n] = {R8, R9, AX, end}, R10 moves on to run[n+1], and the end is
	// written once the string is found plain (rvstop writes 0 otherwise).
	MOVQ R8, Span_KeyStart(R10)
	MOVQ R9, Span_KeyEnd(R10)
	MOVQ AX, Span_Value(R10)
	ADDQ $Span__size, R10
	INCQ R12
	MOVQ AX, R13 // a value that is not a plain string: the caller skips or enters it
	INCQ AX

rvloop:
	LEAQ 16(AX), CX
	CMPQ CX, BX
	JGT  rvtail
	MOVOU (SI)(AX*1), X0
	NOTPLAIN
	TESTL DX, DX
	JNZ  rvfound
	MOVQ CX, AX
	JMP  rvloop

rvtail:
	CMPQ BX, $16
	JLT  rvstop
	CMPQ AX, BX
	JGE  rvstop
	MOVOU -16(SI)(BX*1), X0
	NOTPLAIN
	TAILONLY
	TESTL DX, DX
	JZ   rvstop

rvfound:
	BSFL DX, DX
	ADDQ DX, AX
	CMPB (SI)(AX*1), $0x22
	JNE  rvstop // not a plain string: skipped the general way
	INCQ AX
	MOVQ AX, (Span_End-Span__size)(R10) // the member's End
	JMP  rmember

rstop:
	MOVQ R12, n+32(FP)
	TESTQ R12, R12
	JZ   rret

rspace:
	// Past the whitespace after the last value, as SkipTo.
	CMPQ R13, BX
	JGE  rset
	MOVBLZX (SI)(R13*1), CX
	CMPB CX, $0x20
	JEQ  rnext
	CMPB CX, $0x09
	JEQ  rnext
	CMPB CX, $0x0a
	JEQ  rnext
	CMPB CX, $0x0d
	JNE  rset

rnext:
	INCQ R13
	JMP  rspace

rvstop:
	// o resumes at the value the caller skips or enters, which is not whitespace.
	MOVQ $0, (Span_End-Span__size)(R10)
	MOVQ R12, n+32(FP)

rset:
	MOVQ R13, Object_i(DI)
	MOVB $1, Object_begun(DI)
	MOVB $0, Object_escaped(DI)

rret:
	RET

rclose:
	MOVQ R12, n+32(FP)
	MOVB $1, done+40(FP)
	INCQ AX
	MOVQ AX, Object_i(DI)
	TESTQ R12, R12
	JZ   rret
	MOVB $1, Object_begun(DI)
	MOVB $0, Object_escaped(DI)
	RET
