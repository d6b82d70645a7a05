€€€€€ Bxj
location.p