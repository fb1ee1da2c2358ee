"""
Name parts for the naming cultures of the generated world, all in plain ASCII.

Each culture has given names for men and for women and a list of family
names, written as whitespace-separated words. A family name of two words is
made with a particle (see PARTICLES), never written here.
"""

CULTURES = {
    "english": (
        """James Robert William Richard Thomas Charles George Edward Henry Arthur
        Albert Walter Frederick Harold Samuel Matthew Andrew Stephen Jonathan
        Benjamin Nathan Oliver Leonard Gordon Raymond Howard Douglas Ernest
        Alfred Philip Timothy Graham Nigel Colin Trevor Clifford Wesley Everett
        Milton Ellis Rupert Jasper Barnaby Clement Ambrose""",
        """Elizabeth Margaret Sarah Emily Charlotte Alice Dorothy Edith
        Ruth Grace Eleanor Harriet Rebecca Rachel Laura Hannah Victoria Caroline
        Judith Gwendolyn Mildred Beatrice Agnes Irene Marjorie Phoebe Rosalind
        Vivian Hazel Imogen Philippa Winifred Cordelia Henrietta Millicent""",
        """Ashworth Blackwood Pemberton Whitlock Hargreaves Fairbanks Thornbury
        Caldwell Everly Langford Marlowe Holloway Pennington Redfern Sutcliffe
        Wetherby Ainsworth Bramley Crossley Dunmore Fenwick Garside Haddon
        Lockwood Merriweather Northcott Oakley Prescott Radcliffe Southgate
        Tremaine Underhill Varley Whitmore Yardley Ashby Bellamy Cartwright
        Ellery Goodwin Hollis Ingram Jarvis Kendall Lowry Mayhew Nettleton
        Osgood Pickering Rowntree Stanhope Upton Vickers Wainwright Hathaway
        Blakemore Cottingham Dewhurst Eddington Fairweather Greenhalgh Hebden
        Kettering Lindley Moxon Pilkington Rushworth Shillingford Thistlewood""",
    ),
    "celtic": (
        """Sean Ciaran Declan Padraig Eamon Fergus Brendan Cormac Niall Ruairi
        Lachlan Callum Angus Ewan Hamish Alasdair Duncan Malcolm Finlay Rory
        Tadhg Oisin Diarmuid Cathal""",
        """Siobhan Aoife Niamh Orla Roisin Sinead Mairead Grainne Saoirse Ciara
        Isla Morag Fiona Kirsty Eilidh Catriona Ailsa Shona Deirdre Brona""",
        """O'Donoghue McGillivray MacLeod Gallagher Kavanagh Donnelly Brennan
        Moynihan Fitzgerald Callaghan Mulcahy Keogh Dunleavy MacAulay Buchanan
        Drummond Lennox Sinclair Urquhart Macpherson Grierson Carmichael
        Kilbride McAteer Devlin Flanagan Hegarty Tierney O'Rourke MacKinnon
        Lamont Cunningham McCready O'Faolain Breathnach""",
    ),
    "french": (
        """Jean Pierre Louis Jacques Henri Antoine Etienne Philippe Nicolas Julien
        Mathieu Olivier Thierry Gaston Marcel Lucien Emile Rene Yves Guillaume
        Baptiste Arnaud Didier Frederic Laurent Sebastien Xavier Remy Thibault""",
        """Jeanne Camille Claire Sophie Isabelle Juliette Colette Madeleine
        Genevieve Amelie Brigitte Sylvie Nathalie Mathilde Helene Louise
        Josephine Odile Margaux Elodie Celine Aurelie Simone""",
        """Delacroix Moreau Lefebvre Girard Rousseau Fontaine Chevalier Lambert
        Bonnet Dupuis Marchand Garnier Faure Mercier Blanchard Guerin Boucher
        Perrin Renaud Lemaire Carpentier Dufour Leclerc Aubert Barbier Rolland
        Vasseur Charpentier Lacombe Picard Delorme Brossard Tessier Vidal""",
    ),
    "german": (
        """Johann Friedrich Heinrich Wilhelm Karl Ludwig Ernst Otto Hermann Gustav
        Konrad Dieter Jurgen Klaus Wolfgang Rainer Helmut Gerhard Matthias
        Tobias Lukas Florian Uwe Manfred Werner Bernd Volker Hartmut""",
        """Greta Ingeborg Ursula Hildegard Liesel Gertrud Sabine Petra Monika
        Heike Katrin Johanna Friederike Elke Renate Annelie Dagmar Ulrike
        Franziska Lena Magdalena Adelheid Irmgard""",
        """Baumgartner Hoffmann Schreiber Zimmermann Lehmann Vogel Brandt Kessler
        Hartmann Kaufmann Lindner Seidel Winkler Ziegler Kraus Pfeiffer Kuhn
        Engel Haas Huber Schuster Bergmann Reinhardt Eichhorn Falkenberg
        Oberhauser Steinmetz Waldmann Ackermann Holzer Brenner Rosskopf
        Hinterberger Mittermaier""",
    ),
    "dutch": (
        """Jan Pieter Willem Hendrik Cornelis Joost Maarten Bram Sander Thijs
        Gerrit Dirk Arjen Ruud Stijn Wouter Jeroen Bas Koen Floris Reinier""",
        """Anouk Femke Marieke Saskia Lieke Maaike Janneke Sanne Eline Mirjam
        Geertje Wilhelmina Annelies Tineke Roos Fenna Joke""",
        """Bakker Visser Smit Meijer Mulder Bos Vos Dekker Kuipers Hoekstra
        Veenstra Brouwer Postma Wijnberg Schouten Hendriks Koster Verhoeven
        Dijkstra Groen Timmermans Prins Blom Boer Bosch Hoogeveen Zwart""",
    ),
    "nordic": (
        """Lars Erik Anders Nils Sven Olav Magnus Henrik Bjorn Torbjorn Leif
        Gunnar Einar Haakon Sigurd Ragnar Jens Rasmus Mikkel Mats Ole Asger
        Halvard Steinar""",
        """Ingrid Astrid Sigrid Solveig Kari Liv Karin Britt Freja Maja Ebba
        Linnea Signe Tove Gudrun Ragnhild Helle Mette Hedda Ylva""",
        """Lindqvist Johansson Halvorsen Bergstrom Nygaard Solberg Haugen Sandberg
        Lundgren Dahl Holm Strand Ekstrom Fjeld Moen Berglund Kristiansen Vik
        Aasen Sorensen Thorsen Lindahl Engstrom Nordby Hedlund Bakken Skogstad""",
    ),
    "finnish": (
        """Juha Mikko Jukka Antti Timo Matti Pekka Heikki Ville Eero Tapio Lauri
        Olli Aleksi""",
        """Aino Sanna Tuula Riikka Paivi Kaisa Liisa Maija Sirpa Anneli Elina
        Tiina Outi""",
        """Virtanen Korhonen Makinen Nieminen Heikkinen Koskinen Laaksonen
        Lehtonen Salminen Jarvinen Kallio Rantanen Hamalainen Peltonen Honkanen
        Aaltonen Ojala Karjalainen""",
    ),
    "italian": (
        """Giuseppe Giovanni Antonio Francesco Luigi Alessandro Marco Matteo
        Lorenzo Stefano Paolo Vittorio Salvatore Carlo Enrico Massimo Fabrizio
        Giorgio Riccardo Tommaso Cesare Raffaele Ottavio""",
        """Giulia Francesca Chiara Alessandra Federica Paola Silvia Carla
        Antonella Rosalba Serena Ginevra Ilaria Donatella Ornella Lucrezia""",
        """Bianchi Ricci Marino Greco Gallo Conti Giordano Mancini Rizzo
        Lombardi Moretti Barbieri Fontana Santoro Mariani Rinaldi Caruso Galli
        Martini Leone Longo Gentile Martinelli Vitale Serra Cattaneo Pellegrini
        Orlando Benedetti Fabbri Sartori""",
    ),
    "spanish": (
        """Jose Juan Carlos Miguel Alejandro Fernando Javier Diego Manuel Sergio
        Pablo Andres Ricardo Eduardo Ignacio Alfonso Gonzalo Rodrigo Esteban
        Joaquin Ramon Felipe Mateo Hector Julio Tomas""",
        """Maria Carmen Isabel Lucia Pilar Rosa Teresa Marta Cristina Dolores
        Esperanza Guadalupe Inmaculada Mercedes Valeria Ximena Yolanda Catalina
        Paloma""",
        """Garcia Fernandez Lopez Martinez Sanchez Perez Gomez Ruiz Hernandez Diaz
        Moreno Alvarez Romero Navarro Torres Dominguez Vazquez Ramos Gil Serrano
        Blanco Molina Castro Ortega Delgado Morales Ortiz Suarez Iglesias Cortes
        Castillo Herrera Aguilar Rojas Fuentes Cabrera Villanueva Salazar""",
    ),
    "portuguese": (
        """Joao Pedro Tiago Rui Nuno Paulo Luis Afonso Duarte Goncalo Henrique
        Vinicius Thiago Leonardo Gustavo Caio Renato Marcelo Fabio""",
        """Ana Beatriz Ines Mariana Leonor Joana Catarina Fernanda Juliana Camila
        Larissa Leticia Tatiana Vanessa Adriana""",
        """Silva Santos Ferreira Pereira Oliveira Costa Rodrigues Martins Sousa
        Fernandes Goncalves Gomes Lopes Marques Almeida Ribeiro Pinto Carvalho
        Teixeira Moreira Correia Mendes Nunes Soares Vieira Monteiro Cardoso
        Rocha Barbosa Azevedo Araujo Cavalcanti Moraes Peixoto""",
    ),
    "polish": (
        """Piotr Krzysztof Andrzej Tomasz Pawel Marcin Michal Grzegorz Jakub
        Kazimierz Stanislaw Tadeusz Wojciech Zbigniew Jerzy Leszek Mieczyslaw
        Ryszard Dariusz Slawomir""",
        """Agnieszka Katarzyna Malgorzata Joanna Ewa Dorota Jadwiga Halina
        Grazyna Zofia Wanda Bozena Beata Iwona Krystyna Urszula Danuta Elzbieta""",
        """Kowalski Nowak Wisniewski Wojcik Kaminski Lewandowski Zielinski
        Szymanski Wozniak Dabrowski Kozlowski Jankowski Mazur Kwiatkowski
        Krawczyk Piotrowski Grabowski Pawlak Michalski Nowicki Adamczyk Dudek
        Zajac Wieczorek Jablonski Krol Majewski Olszewski Jaworski Malinowski
        Gorski Sikora""",
    ),
    "czech": (
        """Jiri Petr Josef Martin Jaroslav Miroslav Zdenek Vaclav Karel
        Frantisek Ladislav Vojtech Ondrej Radek Lubos Bohumil""",
        """Jana Hana Lenka Alena Vera Jarmila Marketa Zuzana Tereza Blanka Ivana
        Milada Libuse Vlasta""",
        """Svoboda Dvorak Cerny Prochazka Kucera Vesely Horak Nemec Pokorny
        Pospisil Hajek Kral Jelinek Ruzicka Benes Fiala Sedlak Zeman Dolezal
        Kolar Navratil Cermak Blaha Kriz Machala""",
    ),
    "hungarian": (
        """Laszlo Istvan Zoltan Gabor Ferenc Attila Sandor Janos Gyorgy Bela
        Miklos Imre Lajos Andras Csaba Tibor Gyula Dezso Levente""",
        """Erzsebet Katalin Ilona Zsuzsanna Aniko Judit Krisztina Edit Ildiko
        Orsolya Reka Eszter Timea Noemi Piroska""",
        """Nagy Kovacs Toth Szabo Horvath Varga Kiss Molnar Nemeth Farkas Balogh
        Papp Takacs Juhasz Lakatos Meszaros Olah Racz Fekete Szilagyi Torok
        Feher Balazs Gal Szucs Kocsis Pinter Fodor Szalai Sipos Lukacs Gulyas
        Biro Kiraly Katona""",
    ),
    "russian": (
        """Ivan Dmitri Sergei Alexei Mikhail Nikolai Andrei Yuri Boris Viktor
        Gennady Oleg Konstantin Arkady Grigory Anatoly Leonid Vasily Fyodor
        Yevgeny Maxim""",
        """Natalia Olga Irina Svetlana Yelena Anastasia Ekaterina Ludmila Galina
        Nadezhda Marina Larisa Yulia Valentina Zinaida Polina Daria Ksenia""",
        """Ivanov Smirnov Volkov Sokolov Popov Lebedev Kozlov Novikov Morozov
        Pavlov Orlov Zaitsev Belov Vinogradov Bogdanov Vorobyov Fyodorov
        Mikhailov Tarasov Belyaev Komarov Kiselev Makarov Andreev Kovalev Gusev
        Titov Kuzmin Baranov Kulikov Gromov Zhukov Nikitin Sorokin Golubev
        Frolov Rybakov Voronin Lapin Shchukin Ilyin""",
    ),
    "ukrainian": (
        """Taras Bohdan Oleksandr Mykola Andriy Serhiy Vasyl Yaroslav Ostap Petro
        Dmytro Volodymyr Ihor Yuriy""",
        """Oksana Olena Kateryna Halyna Nataliya Iryna Solomiya Larysa Mariya
        Yaryna Zoryana Lesya Khrystyna""",
        """Shevchenko Kovalenko Bondarenko Tkachenko Kravchenko Oliynyk Lysenko
        Moroz Marchenko Melnyk Savchenko Rudenko Petrenko Boyko Tkachuk
        Kovalchuk Hrytsenko Ponomarenko Sydorenko Levchenko Zinchenko Pavlenko
        Karpenko Yarmolenko Honchar""",
    ),
    "greek": (
        """Georgios Konstantinos Dimitrios Ioannis Nikolaos Panagiotis Vasileios
        Christos Athanasios Michail Evangelos Spyridon Theodoros Stavros
        Apostolos Kyriakos Petros""",
        """Eleni Aikaterini Vasiliki Angeliki Dimitra Konstantina Paraskevi
        Despina Chrysoula Theodora Eirini Kalliopi""",
        """Papadopoulos Nikolaidis Karagiannis Vlachos Makris Papageorgiou
        Oikonomou Christodoulou Konstantinidis Papadakis Stavropoulos Petridis
        Lambrakis Mavros Zervas Galanis Kostopoulos Tsoukalas Raptis
        Panagiotopoulos Kalogeropoulos Vasilakis""",
    ),
    "turkish": (
        """Mehmet Mustafa Ahmet Huseyin Ibrahim Ismail Osman Yusuf Murat Emre
        Burak Kemal Orhan Selim Tarik Cem Kaan Volkan Erdem Serkan""",
        """Ayse Fatma Emine Hatice Zeynep Elif Meryem Sibel Gulsen Derya Esra
        Ozlem Canan Nurcan Pinar Seda Tugba""",
        """Yilmaz Kaya Demir Sahin Celik Yildiz Yildirim Ozturk Aydin Ozdemir
        Arslan Dogan Kilic Cetin Koc Ozkan Simsek Polat Korkmaz Karakaya Unal
        Tekin Gunes Aksoy Bulut Keskin""",
    ),
    "arabic": (
        """Ahmed Mohamed Omar Khalid Youssef Tarek Karim Samir Nabil Walid Rami
        Fadi Ziad Bilal Mahmoud Adel Jamal Faisal Bassam Amr Hamza Rashid Tamer""",
        """Fatima Aisha Layla Nour Yasmin Rania Huda Salma Dina Hala Samira Amal
        Lina Rana Maha Noura Ghada Souad Jamila Zeina""",
        """Haddad Khoury Mansour Saleh Hamdan Abdallah Farouk Darwish Khalil
        Najjar Sabbagh Shami Zaki Qasim Hijazi Toumi Benali Bensaid Alaoui Tazi
        Hamadi Kassab Jaber Masri Halabi Tamimi Rahal Karam Bitar Attar""",
    ),
    "persian": (
        """Reza Hossein Mehdi Amir Farhad Dariush Kourosh Babak Arash Behnam
        Saeed Hamid Kaveh Payam Ramin Siavash Omid Navid""",
        """Maryam Shirin Parisa Nasrin Azadeh Fereshteh Mahnaz Roya Golnar
        Setareh Niloufar Soraya Yasaman Mina Shabnam Ladan Tahmineh""",
        """Ahmadi Hosseini Rezaei Mohammadi Karimi Moradi Jafari Rahimi Sadeghi
        Kazemi Bagheri Ghorbani Mirzaei Nazari Farahani Amini Rostami Sharifi
        Hashemi Akbari Najafi Javadi Taheri Parvizi Kamali Nikpour""",
    ),
    "indian": (
        """Rajesh Suresh Anil Sunil Vikram Arjun Rahul Sanjay Amit Ravi Pradeep
        Manoj Deepak Arun Venkat Srinivas Harish Ramesh Gopal Ashok Naveen
        Rohan Vivek Aditya Siddharth Karthik Abhishek""",
        """Priya Anjali Lakshmi Sunita Kavita Meera Deepa Pooja Asha Radha
        Shalini Nandini Rekha Savita Sushma Geeta Anita Divya Aparna Kamala
        Padma Shruti Neha Aishwarya""",
        """Sharma Verma Gupta Iyer Nair Reddy Rao Menon Pillai Kulkarni Deshpande
        Joshi Patil Chatterjee Banerjee Mukherjee Bose Ghosh Das Sinha Mehta
        Desai Kapoor Malhotra Khanna Chopra Bhatia Saxena Trivedi Pandey
        Mishra Tiwari Agarwal Naidu Krishnan Subramanian Raghavan Venkataraman""",
    ),
    "urdu": (
        """Imran Tariq Shahid Asif Farhan Usman Zubair Waqar Junaid Kamran Nadeem
        Sohail Javed Irfan Rizwan""",
        """Ayesha Sana Saima Nadia Rabia Farah Hina Sadia Bushra Mehwish Uzma
        Amna""",
        """Qureshi Siddiqui Malik Chaudhry Butt Mirza Sheikh Abbasi Ansari Hashmi
        Bhatti Awan Rizvi Zaidi Naqvi Jatoi""",
    ),
    "chinese": (
        """Wei Jun Hao Lei Tao Jian Ming Qiang Bo Peng Yong Feng Gang Zhiwei
        Jianguo Xiaoming Haoran Zihao Yifan Guowei Dongsheng Jiahao Weimin""",
        """Mei Ling Fang Xiu Yan Jing Hua Xiaoling Yuxin Meilin Xinyi Jiayi
        Shuang Lanfen Ying Qing Wenjing Huifang Yuting""",
        """Wang Zhang Liu Chen Yang Huang Zhao Zhou Xu Sun Zhu Guo He Lin Gao
        Luo Zheng Liang Xie Song Tang Feng Deng Cao Zeng Xiao Tian Dong Pan
        Yuan Cai Jiang Du Ye Cheng Su Lu Ding Shen""",
    ),
    "japanese": (
        """Hiroshi Takashi Kenji Satoshi Kazuo Yoshio Makoto Akira Haruki Daisuke
        Shinji Tetsuya Masato Ryota Kenta Naoki Koji Toshio Hideki Shigeru Isamu
        Kunio Tatsuya""",
        """Yoko Keiko Akiko Yumiko Naoko Tomoko Sachiko Michiko Haruka Ayumi Emi
        Kaori Mayumi Noriko Rie Sayaka Yui Aoi Chieko Fumiko Hanako Kazuko""",
        """Sato Suzuki Takahashi Tanaka Watanabe Ito Yamamoto Nakamura Kobayashi
        Kato Yoshida Yamada Sasaki Yamaguchi Matsumoto Inoue Kimura Hayashi
        Shimizu Yamazaki Mori Abe Ikeda Hashimoto Ishikawa Ogawa Fujita Okada
        Goto Hasegawa Murakami Kondo Ishii Sakamoto Endo Aoki Fujii Nishimura
        Fukuda Ota Miura Okamoto Matsuda Nakagawa""",
    ),
    "korean": (
        """Min-jun Seo-jun Ji-ho Hyun-woo Jae-sung Dong-hyun Sung-min Young-ho
        Jin-woo Sang-hoon Tae-yang Kyung-soo Byung-chul Chang-min Joon-ho""",
        """Ji-yeon Seo-yeon Min-ji Hye-jin Eun-ji Soo-jin Yoo-na Ha-eun Ji-woo
        Da-eun Mi-kyung Young-hee Sun-hee Jung-eun""",
        """Kim Lee Park Choi Jung Kang Cho Yoon Jang Lim Oh Seo Shin Kwon Hwang
        Ahn Jeon Hong Yoo Ko Moon Son Bae Baek Heo Nam Noh""",
    ),
    "vietnamese": (
        """Minh Tuan Hung Duc Thanh Quang Hieu Long Khoa Phuc Trung Dung Bao
        Vinh""",
        """Lan Huong Mai Linh Thao Trang Ngoc Hoa Phuong Thu Hanh Yen Diep""",
        """Nguyen Tran Le Pham Hoang Phan Vu Dang Bui Do Ho Ngo Duong Ly Truong
        Dinh Lam Trinh Quach""",
    ),
    "thai": (
        """Somchai Surasak Prasert Anan Chaiwat Kittipong Narong Pichai Sakda
        Thanakorn Wichai""",
        """Siriporn Malee Pranee Kanya Nittaya Wanida Sunisa Ratana Chanida
        Pimchanok""",
        """Srisuk Chaiyaporn Wongsakul Rattanakorn Suwannarat Thongchai Boonyarat
        Charoenkul Phromma Saetang Chanthavong Sombat""",
    ),
    "west_african": (
        """Oluwaseun Chinedu Emeka Babatunde Olumide Kwame Kofi Yaw Kwabena Obinna
        Chukwuemeka Tunde Femi Segun Ikenna Nnamdi Kayode Ayodele Folarin""",
        """Ngozi Chiamaka Adaeze Funmilayo Yetunde Abena Akosua Ama Efua Nkechi
        Chioma Titilayo Folake Omolara Ifeoma Adwoa Esi Bisi""",
        """Adeyemi Okafor Okonkwo Olawale Eze Nwosu Obi Balogun Ogunleye Afolabi
        Chukwu Onyeka Mensah Boateng Asante Owusu Appiah Osei Agyeman Danso
        Ofori Nwachukwu Ibekwe Oyelaran Adeleke Akinola Oduya Bankole Okeke""",
    ),
    "east_african": (
        """Otieno Juma Baraka Omondi Mutua Kariuki Njoroge Ochieng Dawit Abebe
        Yohannes Amani Jabari Musa""",
        """Wanjiru Akinyi Achieng Nyambura Wambui Njeri Zawadi Neema Amina Rehema
        Mekdes Selam Tigist Hiwot Almaz Makena""",
        """Kamau Odhiambo Mwangi Wekesa Kiprono Chebet Mutai Rotich Onyango Kibet
        Okello Mugisha Ssempala Mwakilema Massawe Tesfaye Bekele Girma Alemu
        Desta Mengistu Tadesse Wolde Gebremariam""",
    ),
    "afrikaans": (
        """Johannes Jacobus Stefanus Andries Francois Gerhardus Petrus Christiaan
        Barend Hennie""",
        """Elna Marietjie Sanet Riana Lize Marike Karlien Elmarie Annatjie
        Susanna""",
        """Botha Pretorius Joubert Venter Coetzee Nel Steyn Kruger Fourie
        Swanepoel Erasmus Viljoen Oosthuizen Badenhorst Snyman Labuschagne""",
    ),
    "armenian": (
        """Aram Armen Hovhannes Tigran Vahan Gevorg Ashot Levon Sarkis Hakob Narek
        Arsen""",
        """Anahit Lusine Nune Armine Siranush Gayane Hasmik Knarik Tatevik Shushan
        Ani""",
        """Hakobyan Petrosyan Grigoryan Sargsyan Harutyunyan Vardanyan Karapetyan
        Ghazaryan Avetisyan Mkrtchyan Hovsepyan Manukyan Zakaryan Baghdasaryan
        Melkonian Arakelian Tashjian Keshishian Boyajian""",
    ),
    "georgian": (
        """Giorgi Levan Irakli Zurab Nikoloz Tengiz Vakhtang Otar Shota Revaz
        Gela Merab""",
        """Nino Tamar Ketevan Eka Natia Salome Tinatin Nana Lela Maia""",
        """Beridze Kapanadze Gelashvili Maisuradze Giorgadze Lomidze Tsiklauri
        Bolkvadze Kvaratskhelia Nozadze Chkheidze Abashidze Gogoladze
        Javakhishvili Tsereteli Lortkipanidze Kiknadze Mchedlishvili Kobakhidze""",
    ),
    "hebrew": (
        """Avraham Yosef Moshe Eitan Noam Yonatan Ariel Gideon Uri Itai Omer Yair
        Shlomo Ehud Boaz Nadav""",
        """Noa Yael Shira Michal Adi Efrat Hadas Liat Orly Ronit Dalia Galit Tali
        Ayelet Rivka""",
        """Mizrahi Peretz Biton Dahan Friedman Azoulay Ben-David Katz Shapiro
        Rosenberg Goldberg Weiss Segal Amsalem Ohana Ben-Ami Sasson Elbaz Golan
        Barak Carmeli Shalev Harari Yaron""",
    ),
    "romanian": (
        """Ion Mihai Florin Cristian Dragos Catalin Sorin Lucian Ovidiu Radu
        Traian Vlad Costin Marius Adrian""",
        """Ioana Andreea Mihaela Raluca Simona Alina Oana Gabriela Roxana Corina
        Luminita Violeta""",
        """Popescu Ionescu Popa Dumitrescu Stoica Dinu Munteanu Lungu Mocanu
        Nistor Marinescu Georgescu Radulescu Enache Dobre Barbu Florea Serban
        Vasilescu Preda Ilie Nicolescu Cristea Manole Dragomir""",
    ),
    "south_slavic": (
        """Marko Nikola Luka Milos Dragan Zoran Goran Bojan Dejan Nenad Petar
        Aleksandar Ivica Tomislav Ante Davor Branimir""",
        """Jelena Ivana Marija Milica Snezana Dragana Vesna Gordana Tanja Mirjana
        Ljiljana Jasmina Biljana Natasa Sanja""",
        """Jovanovic Petrovic Nikolic Markovic Djordjevic Stojanovic Ilic
        Stankovic Pavlovic Popovic Kovacevic Horvat Babic Maric Juric Kovacic
        Vukovic Knezevic Tomic Radic Bozic Grgic Matic Peric Simic Lukic Vidovic
        Perisic""",
    ),
}

PARTICLES = {
    "dutch": (0.4, ["van", "van der", "de", "van den"]),
    "german": (0.08, ["von"]),
    "french": (0.1, ["de"]),
}

# Family names that change for women: (ending, replacement) tried in order;
# an empty ending matches any name.
FEMININE_ENDINGS = {
    "polish": [("ski", "ska"), ("cki", "cka")],
    "czech": [("y", "a"), ("a", "ova"), ("", "ova")],
    "russian": [("ov", "ova"), ("ev", "eva"), ("in", "ina")],
    "greek": [("os", "ou"), ("is", "i"), ("as", "a")],
}
