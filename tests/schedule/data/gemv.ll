; The C functions of the declared matrix-vector intrinsic in tests/schedule/test_user_intrin.py,
; written in LLVM IR (what clang -S -emit-llvm makes of them):
;   gemv_set(c, a, b, m, l, stride):    c[i] = sum_j a[j] * b[i * stride + j]
;   gemv_update(c, a, b, m, l, stride): c[i] += sum_j a[j] * b[i * stride + j]
;   gemv_reset(c, m):                   c[i] = 0
;   vadd(c, a, b, n):                   c[i] = a[i] + b[i]

define i32 @gemv_update(ptr %cc, ptr %aa, ptr %bb, i32 %m, i32 %l, i32 %stride) {
entry:
  br label %outer
outer:
  %i = phi i32 [ 0, %entry ], [ %i.next, %outer.end ]
  %i.done = icmp sge i32 %i, %m
  br i1 %i.done, label %exit, label %inner.pre
inner.pre:
  %ci = getelementptr float, ptr %cc, i32 %i
  %row = mul i32 %i, %stride
  br label %inner
inner:
  %j = phi i32 [ 0, %inner.pre ], [ %j.next, %inner ]
  %acc = load float, ptr %ci
  %ap = getelementptr float, ptr %aa, i32 %j
  %a = load float, ptr %ap
  %bidx = add i32 %row, %j
  %bp = getelementptr float, ptr %bb, i32 %bidx
  %b = load float, ptr %bp
  %p = fmul float %a, %b
  %s = fadd float %acc, %p
  store float %s, ptr %ci
  %j.next = add i32 %j, 1
  %j.done = icmp sge i32 %j.next, %l
  br i1 %j.done, label %outer.end, label %inner
outer.end:
  %i.next = add i32 %i, 1
  br label %outer
exit:
  ret i32 0
}

define i32 @gemv_reset(ptr %cc, i32 %m) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %p = getelementptr float, ptr %cc, i32 %i
  store float 0.0, ptr %p
  %i.next = add i32 %i, 1
  %done = icmp sge i32 %i.next, %m
  br i1 %done, label %exit, label %loop
exit:
  ret i32 0
}

define i32 @gemv_set(ptr %cc, ptr %aa, ptr %bb, i32 %m, i32 %l, i32 %stride) {
entry:
  %r = call i32 @gemv_reset(ptr %cc, i32 %m)
  %u = call i32 @gemv_update(ptr %cc, ptr %aa, ptr %bb, i32 %m, i32 %l, i32 %stride)
  ret i32 0
}

define i32 @vadd(ptr %cc, ptr %aa, ptr %bb, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %ap = getelementptr float, ptr %aa, i32 %i
  %bp = getelementptr float, ptr %bb, i32 %i
  %cp = getelementptr float, ptr %cc, i32 %i
  %a = load float, ptr %ap
  %b = load float, ptr %bp
  %s = fadd float %a, %b
  store float %s, ptr %cp
  %i.next = add i32 %i, 1
  %done = icmp sge i32 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret i32 0
}
